//! Open streams end when their caller's credential stops authenticating: every streaming call
//! passes [`rechecked`], and `RunAgent` checks [`still_valid`] before each answer frame.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures::Stream;
use tokio::time::{Instant, Sleep};
use tonic::Status;
use tracing::warn;

use crate::auth::{AuthError, Credential};

/// A stream of a streaming RPC.
pub type StatusStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// `stream`, which ends with UNAUTHENTICATED (`INVALID_CREDENTIALS`) at the first re-check, every
/// `--principal-recheck`, that finds its credential revoked or expired. A re-check that cannot be
/// made (store or JWKS unreachable) keeps the stream and is tried again at the next interval, so
/// that a blip of the store does not drop every stream. Nothing to re-check: `stream` as it is.
pub fn rechecked<T: Send + 'static>(
    stream: StatusStream<T>,
    credential: Option<Credential>,
) -> StatusStream<T> {
    let Some(credential) = credential else {
        return stream;
    };
    Box::pin(Rechecked {
        stream,
        next_check: Box::pin(tokio::time::sleep(credential.interval())),
        credential,
        checking: None,
        ended: false,
    })
}

/// A re-check of a credential under way.
type Check = Pin<Box<dyn Future<Output = Result<(), AuthError>> + Send>>;

/// The stream [`rechecked`] returns. Written out rather than as a generator with a `select!`: it
/// wraps every frame of every stream when keys are on, and the generator's hand-off and the
/// select's polling cost about as much as one of the key's lookups per round trip.
struct Rechecked<T> {
    stream: StatusStream<T>,
    credential: Credential,
    next_check: Pin<Box<Sleep>>,
    /// The re-check under way: the stream's items wait for it.
    checking: Option<Check>,
    ended: bool,
}

impl<T> Stream for Rechecked<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            if let Some(check) = this.checking.as_mut() {
                let outcome = ready!(check.as_mut().poll(cx));
                this.checking = None;
                match outcome {
                    Ok(()) => {}
                    Err(error @ (AuthError::Store(_) | AuthError::Jwks(_))) => {
                        warn!(%error, "cannot re-check a stream's credential; trying again later");
                    }
                    Err(error) => {
                        this.ended = true;
                        return Poll::Ready(Some(Err(Status::from(error))));
                    }
                }
                this.next_check
                    .as_mut()
                    .reset(Instant::now() + this.credential.interval());
            }
            // The timer first: a stream that always has an item ready is re-checked all the same.
            if this.next_check.as_mut().poll(cx).is_ready() {
                let credential = this.credential.clone();
                this.checking = Some(Box::pin(async move { credential.check().await }));
                continue;
            }
            let item = ready!(this.stream.as_mut().poll_next(cx));
            this.ended = item.is_none();
            return Poll::Ready(item);
        }
    }
}

/// Whether the credential (if any) still authenticates, checked before an answer is taken: a
/// revoked key or an expired token answers nothing, and neither does one that cannot be checked.
pub async fn still_valid(credential: Option<&Credential>) -> Result<(), Status> {
    match credential {
        Some(credential) => credential.check().await.map_err(Status::from),
        None => Ok(()),
    }
}

//! Open streams end when their caller's credential stops authenticating: every streaming call
//! passes [`rechecked`], and `RunAgent` checks [`still_valid`] before each answer frame.

use std::pin::Pin;

use futures::{Stream, StreamExt};
use tokio::time::{Instant, MissedTickBehavior};
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
    Box::pin(async_stream::stream! {
        let mut stream = stream;
        let period = credential.interval();
        let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                item = stream.next() => match item {
                    Some(item) => yield item,
                    None => break,
                },
                _ = ticks.tick() => match credential.check().await {
                    Ok(()) => {}
                    Err(error @ (AuthError::Store(_) | AuthError::Jwks(_))) => {
                        warn!(%error, "cannot re-check a stream's credential; trying again later");
                    }
                    Err(error) => {
                        yield Err(Status::from(error));
                        break;
                    }
                },
            }
        }
    })
}

/// Whether the credential (if any) still authenticates, checked before an answer is taken: a
/// revoked key or an expired token answers nothing, and neither does one that cannot be checked.
pub async fn still_valid(credential: Option<&Credential>) -> Result<(), Status> {
    match credential {
        Some(credential) => credential.check().await.map_err(Status::from),
        None => Ok(()),
    }
}

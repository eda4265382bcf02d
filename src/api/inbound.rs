//! The client's half of a `RunAgent` stream, read to its end after the server has answered.
//!
//! Dropping a request body the client is still sending makes h2 reset the stream
//! (`RST_STREAM(NO_ERROR)`). The client, having read the response's end, half-closes at about the
//! same time; when its `END_STREAM` crosses the reset, the server has already forgotten the stream
//! (h2 remembers at most 50 reset streams, for 1 s) and answers `STREAM_CLOSED`, a reset h2 counts
//! against `max_local_error_reset_streams`: a few thousand normal runs later the connection is torn
//! down with `GOAWAY ENHANCE_YOUR_CALM "too_many_internal_resets"`. Reading the half to its end
//! instead lets the stream close without any reset.

use std::time::Duration;

use tonic::Streaming;

use crate::proto::v1 as pb;
use crate::runtime::Runtime;

/// How long a client may take to half-close after the server has answered; past it (or at
/// shutdown) the half is dropped and h2 resets the stream as before. Short, as the stream keeps its
/// place among the connection's concurrent streams while it waits.
const HALF_CLOSE_WAIT: Duration = Duration::from_secs(2);

/// A `RunAgent` request stream that, when dropped unfinished, is read to its end in the
/// background.
pub struct Inbound {
    stream: Option<Streaming<pb::RunAgentRequest>>,
    runtime: Runtime,
}

impl Inbound {
    pub fn new(stream: Streaming<pb::RunAgentRequest>, runtime: Runtime) -> Self {
        Self {
            stream: Some(stream),
            runtime,
        }
    }

    /// The client's next frame; `Ok(None)` once it half-closed.
    pub async fn message(&mut self) -> Result<Option<pb::RunAgentRequest>, tonic::Status> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(None);
        };
        let message = stream.message().await;
        if !matches!(message, Ok(Some(_))) {
            // Ended or broken: nothing is left to read.
            self.stream = None;
        }
        message
    }
}

impl Drop for Inbound {
    fn drop(&mut self) {
        let Some(mut stream) = self.stream.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let runtime = self.runtime.clone();
        handle.spawn(async move {
            let to_end = async { while let Ok(Some(_)) = stream.message().await {} };
            tokio::select! {
                () = to_end => {}
                () = tokio::time::sleep(HALF_CLOSE_WAIT) => {}
                () = runtime.stopping() => {}
            }
        });
    }
}

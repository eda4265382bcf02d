//! Printing a run's stream (`ResumeRun`, `WatchRun`) until it ends.

use tonic::Streaming;

use super::CliError;
use super::call::WaitingCalls;
use super::print::Printer;
use crate::proto::v1 as pb;
use crate::proto::v1::run_agent_response::Event;

/// Prints each frame until the stream ends, noting the calls that wait; a failed run is an error.
pub async fn follow(
    mut stream: Streaming<pb::RunAgentResponse>,
    printer: &mut Printer,
    waiting: &mut WaitingCalls,
) -> Result<(), CliError> {
    while let Some(frame) = stream.message().await? {
        printer.frame(&frame)?;
        waiting.note(&frame);
        if let Some(Event::RunFailed(failed)) = frame.event {
            return Err(CliError::RunFailed {
                run_id: frame.run_id,
                message: failed.message,
            });
        }
    }
    Ok(())
}

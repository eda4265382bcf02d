//! The pending-calls feed's events as `WatchPendingCalls` frames, with heartbeats.

use std::pin::Pin;
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use tonic::Status;

use super::agent_service::StreamPermit;
use super::convert;
use super::error::ApiError;
use crate::proto::v1 as pb;
use crate::runtime::{PendingEvent, PendingStream};
use crate::store::RunPendingCall;

/// The frames of the pending-calls feed.
pub type PendingFrameStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchPendingCallsResponse, Status>> + Send>>;

type Frame = Result<pb::WatchPendingCallsResponse, Status>;

/// The feed as frames, with a heartbeat whenever nothing else went out for a whole interval. A
/// snapshot's page is one event, sent frame by frame: a call costs its conversion and encoding,
/// and no turn of this stream's machinery.
pub(super) fn pending_frames(
    permit: StreamPermit,
    mut events: PendingStream,
    heartbeat: Duration,
) -> PendingFrameStream {
    let frames = async_stream::stream! {
        // Held as long as the feed is open.
        let _permit = permit;
        // One timer for the feed, armed only when it waits: a snapshot of many calls sends them
        // without registering a timer per page.
        let quiet = tokio::time::sleep(heartbeat);
        tokio::pin!(quiet);
        loop {
            let event = match events.next().now_or_never() {
                Some(event) => event,
                None => {
                    quiet.as_mut().reset(tokio::time::Instant::now() + heartbeat);
                    tokio::select! {
                        event = events.next() => event,
                        () = &mut quiet => {
                            yield Frames::one(Ok(convert::pending_calls_frame(
                                pb::watch_pending_calls_response::Event::Heartbeat(pb::Heartbeat {}),
                            )));
                            continue;
                        }
                    }
                }
            };
            match event {
                Some(Ok(event)) => yield Frames::of(event),
                Some(Err(error)) => {
                    yield Frames::one(Err(Status::from(ApiError::from(error))));
                    break;
                }
                None => break,
            }
        }
    };
    Box::pin(frames.flat_map(futures::stream::iter))
}

/// The frames of one event of the feed, made as they are sent (a page of a snapshot is made into
/// frames call by call), or one frame of the feed's own (a heartbeat, or the error that ends it).
enum Frames {
    Calls(std::vec::IntoIter<RunPendingCall>),
    // Boxed: a snapshot's frames come from `Calls`, this one is seldom made.
    One(Option<Box<Frame>>),
}

impl Frames {
    fn of(event: PendingEvent) -> Frames {
        let frame = match event {
            PendingEvent::Pending(calls) => return Frames::Calls(calls.into_iter()),
            PendingEvent::Settled {
                run_id,
                tool_call_id,
                kind,
                settled_by,
            } => convert::call_settled_frame(run_id, tool_call_id, kind, settled_by),
            PendingEvent::SnapshotDone => convert::pending_calls_frame(
                pb::watch_pending_calls_response::Event::SnapshotDone(pb::SnapshotDone {}),
            ),
        };
        Frames::one(Ok(frame))
    }

    fn one(frame: Frame) -> Frames {
        Frames::One(Some(Box::new(frame)))
    }
}

impl Iterator for Frames {
    type Item = Frame;

    fn next(&mut self) -> Option<Frame> {
        match self {
            Frames::Calls(calls) => calls
                .next()
                .map(|call| Ok(convert::call_pending_frame(call))),
            Frames::One(frame) => frame.take().map(|frame| *frame),
        }
    }
}

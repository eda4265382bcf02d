package dev.askuser.client;

import dev.askuser.v1.RunAgentResponse;

/**
 * The frames of a run as the server streams them ({@code RunAgent}, {@code ResumeRun}, {@code
 * WatchRun}), read one at a time with blocking calls.
 *
 * <p>Heartbeat frames are dropped: they only keep idle connections alive and say nothing about the
 * run. When the stream fails, {@link #hasNext()} and {@link #next()} throw the {@link
 * AskUserException}. {@link #close()} cancels the call; use try-with-resources when a loop may stop
 * before the run ends.
 */
public class FrameStream extends EventStream<RunAgentResponse> {
  FrameStream(int bufferSize) {
    super(frame -> frame.getEventCase() == RunAgentResponse.EventCase.HEARTBEAT, bufferSize);
  }
}

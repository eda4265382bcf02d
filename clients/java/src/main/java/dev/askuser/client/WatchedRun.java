package dev.askuser.client;

import dev.askuser.v1.AgentServiceGrpc;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.WatchRunRequest;

/**
 * A {@code WatchRun} stream that, dropped with {@code UNAVAILABLE}, opens again after the last
 * sequence it delivered, under the client's {@link Reconnect} policy (null backoff: never).
 */
final class WatchedRun extends FrameStream {
  private final AgentServiceGrpc.AgentServiceStub stub;
  private final String runId;
  private final Backoff backoff;
  private long lastSequence;

  WatchedRun(AgentServiceGrpc.AgentServiceStub stub, String runId, long afterSequence, int bufferSize, Backoff backoff) {
    super(bufferSize);
    this.stub = stub;
    this.runId = runId;
    this.backoff = backoff;
    this.lastSequence = afterSequence;
    synchronized (lock) {
      open();
    }
  }

  private void open() {
    stub.watchRun(
        WatchRunRequest.newBuilder().setRunId(runId).setAfterSequence(lastSequence).build(), receiver());
  }

  @Override
  boolean accept(RunAgentResponse frame) {
    if (backoff != null) {
      backoff.reset();
    }
    long sequence = frame.getSequence();
    if (sequence > 0 && sequence <= lastSequence) {
      return false; // delivered before the stream was opened again
    }
    lastSequence = Math.max(lastSequence, sequence);
    return true;
  }

  @Override
  boolean reopen(AskUserException failure) {
    return reopenAfter(backoff, failure, stub.getCallOptions().getDeadline(), this::open);
  }
}

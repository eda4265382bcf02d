package dev.askuser.client;

import dev.askuser.v1.AgentServiceGrpc;
import dev.askuser.v1.AskRequest;
import dev.askuser.v1.HumanServiceGrpc;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.WatchRunRequest;
import io.grpc.Deadline;

/**
 * The frames of one request: a {@code HumanService.Ask} stream that, dropped with {@code
 * UNAVAILABLE}, opens again under the client's {@link Reconnect} policy (null backoff: never), as
 * {@code WatchRun} after the last sequence it delivered once the request's run id is known, and
 * before that as the same {@code Ask} again (its {@code request_id} follows the same request from
 * its first event; frames delivered already are dropped). Its deadline, if any, counts from the
 * first call across every reopening.
 */
final class AskStream extends FrameStream {
  private final HumanServiceGrpc.HumanServiceStub humans;
  private final AgentServiceGrpc.AgentServiceStub agents;
  private final AskRequest request;
  private final Backoff backoff;
  private final Deadline deadline;
  private volatile String runId;
  private volatile long lastSequence;

  /** Opens the {@code Ask} call; {@code humans} carries the deadline, which {@code agents} gets too. */
  AskStream(
      HumanServiceGrpc.HumanServiceStub humans,
      AgentServiceGrpc.AgentServiceStub agents,
      AskRequest request,
      int bufferSize,
      Backoff backoff) {
    super(bufferSize);
    this.deadline = humans.getCallOptions().getDeadline();
    this.humans = humans;
    this.agents = deadline == null ? agents : agents.withDeadline(deadline);
    this.request = request;
    this.backoff = backoff;
    synchronized (lock) {
      open();
    }
  }

  private void open() {
    if (runId == null) {
      humans.ask(request, receiver());
    } else {
      agents.watchRun(WatchRunRequest.newBuilder().setRunId(runId).setAfterSequence(lastSequence).build(), receiver());
    }
  }

  /** The request's run id, once a frame told it; null before. */
  String runId() {
    return runId;
  }

  @Override
  boolean accept(RunAgentResponse frame) {
    if (backoff != null) {
      backoff.reset();
    }
    if (runId == null && !frame.getRunId().isEmpty()) {
      runId = frame.getRunId();
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
    return reopenAfter(backoff, failure, deadline, this::open);
  }
}

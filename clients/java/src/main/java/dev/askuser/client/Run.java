package dev.askuser.client;

import dev.askuser.v1.AgentServiceGrpc;
import dev.askuser.v1.Answer;
import dev.askuser.v1.AttachRun;
import dev.askuser.v1.FieldValue;
import dev.askuser.v1.RunAgentRequest;
import dev.askuser.v1.RunAgentResponse;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * An open {@code RunAgent} stream: iterate it for the run's frames, answer its questions with
 * {@link #answerText}, {@link #answerSelections} or {@link #decline} and its forms with {@link
 * #answerForm} (or {@link #decline}), reply to either with {@link #reply}, settle client tool calls with
 * {@link #sendToolOutput} and approvals with {@link #approve}, {@link #reject} or {@link
 * #editArguments}.
 *
 * <p>The answer methods leave the answer's run id empty, which the server reads as this stream's
 * run. A bad answer does not fail the stream; it comes back as an {@code answer_rejected} frame and
 * the question stays answerable. Reading and answering may happen on different threads.
 * {@link #close()} disconnects; the run goes on without this stream and can be attached again.
 *
 * <p>Reattachment: when the stream drops with {@code UNAVAILABLE} (a server restart, a reset
 * connection), reading opens it again with {@code AttachRun} after the last sequence it delivered,
 * under the client's {@link Reconnect} policy, and goes on: no stored frame is lost or delivered
 * twice. Answers are never lost to a drop: one sent while the stream is down, or sent before the drop
 * and not yet acknowledged ({@code answer_accepted} / {@code answer_rejected}), is sent again on the
 * new stream. Give answers an {@code answer_id} to make that resend idempotent: without one, an
 * answer that had reached the server just before the drop comes back rejected (no longer pending).
 * The stream's deadline, if any, still counts from the start; a deadline or a cancellation ends it
 * for good.
 */
public final class Run extends FrameStream {
  private final AgentServiceGrpc.AgentServiceStub stub;
  /** Null when the client's policy does not reconnect. */
  private final Backoff backoff;
  /** Answers sent and not acknowledged yet, in order; only kept when reattaching (guarded by lock). */
  private final List<RunAgentRequest> unacknowledged = new ArrayList<>();
  /** The requests of the current call (guarded by lock). */
  private StreamObserver<RunAgentRequest> requests;
  /** The run's id: given to attach, or read from the first frame of a started run. */
  private volatile String runId;
  private volatile long lastSequence;

  /** Opens the stream and sends its first frame ({@code start} or {@code attach}). */
  Run(
      AgentServiceGrpc.AgentServiceStub stub,
      RunAgentRequest firstFrame,
      int bufferSize,
      Reconnect reconnect,
      ManagedChannel channel) {
    super(bufferSize);
    this.stub = stub;
    this.backoff = reconnect.enabled() ? new Backoff(reconnect, channel) : null;
    if (firstFrame.hasAttach()) {
      runId = firstFrame.getAttach().getRunId();
      lastSequence = firstFrame.getAttach().getAfterSequence();
    }
    synchronized (lock) {
      open(firstFrame);
    }
  }

  /** Opens a call whose first frame is {@code first}, then resends what is unacknowledged. */
  private void open(RunAgentRequest first) {
    requests = stub.runAgent(receiver());
    requests.onNext(first);
    unacknowledged.forEach(requests::onNext);
  }

  /**
   * The id of this stream's run. For a started run it is known once the {@code run_started} frame
   * arrived: this blocks until then (the frame is still delivered by iteration).
   *
   * @throws AskUserException when the stream failed before the run started (e.g. an unknown agent)
   */
  public String runId() {
    if (runId == null && !hasNext()) {
      throw new IllegalStateException("the stream ended before the run started");
    }
    return runId;
  }

  /** The sequence of the last stored frame delivered (where a reattachment picks up); 0: none yet. */
  public long lastSequence() {
    return lastSequence;
  }

  @Override
  boolean accept(RunAgentResponse frame) {
    if (backoff != null) {
      backoff.reset();
    }
    if (runId == null) {
      runId = frame.getRunId();
    }
    long sequence = frame.getSequence();
    if (sequence > 0 && sequence <= lastSequence) {
      return false; // delivered before a reattachment
    }
    lastSequence = Math.max(lastSequence, sequence);
    switch (frame.getEventCase()) {
      case ANSWER_ACCEPTED -> acknowledge(frame.getAnswerAccepted().getToolCallId());
      case ANSWER_REJECTED -> acknowledge(frame.getAnswerRejected().getToolCallId());
      default -> {}
    }
    return true;
  }

  private void acknowledge(String toolCallId) {
    synchronized (lock) {
      for (int i = 0; i < unacknowledged.size(); i++) {
        if (unacknowledged.get(i).getAnswer().getToolCallId().equals(toolCallId)) {
          unacknowledged.remove(i);
          return;
        }
      }
    }
  }

  @Override
  boolean reopen(AskUserException failure) {
    // A run that never started has no id to attach to; starting again could start a second run.
    if (runId == null) {
      return false;
    }
    return reopenAfter(backoff, failure, stub.getCallOptions().getDeadline(), () -> {
      AttachRun attach = AttachRun.newBuilder().setRunId(runId).setAfterSequence(lastSequence).build();
      open(RunAgentRequest.newBuilder().setAttach(attach).build());
    });
  }


  /**
   * Sends an answer frame as given: any run id, answer and {@code answer_id}. While the stream is
   * down it is kept and sent once the stream is attached again.
   */
  public void answer(Answer answer) {
    RunAgentRequest request = RunAgentRequest.newBuilder().setAnswer(answer).build();
    synchronized (lock) {
      if (isClosed()) {
        throw new IllegalStateException("the stream is closed");
      }
      if (backoff != null) {
        unacknowledged.add(request);
      }
      // On a call that already failed this is a no-op: the reattached call resends it.
      requests.onNext(request);
    }
  }

  /** Answers a free-text question, or a single-select one with the exact label chosen. */
  public void answerText(String toolCallId, String text) {
    answer(Answers.text("", toolCallId, text));
  }

  /** Answers a select question with the chosen labels, in the order they were chosen. */
  public void answerSelections(String toolCallId, List<String> labels) {
    answer(Answers.selections("", toolCallId, labels));
  }

  /**
   * Declines to answer a question (or rejects a call that waits for approval); {@code reason}
   * (possibly empty) is passed on to the model.
   */
  public void decline(String toolCallId, String reason) {
    answer(Answers.decline("", toolCallId, reason));
  }

  /**
   * Answers a form ({@code SUSPEND_KIND_FORM}) with each field's value ({@link FieldValues}) by the
   * field's name. A wrong value comes back as {@code answer_rejected}, with a violation per field
   * (e.g. {@code answer.form.values["replicas"]}), and the form stays answerable.
   */
  public void answerForm(String toolCallId, Map<String, FieldValue> values) {
    answer(Answers.form("", toolCallId, values));
  }

  /**
   * Replies in prose instead of answering a question or a form: the call settles ({@code
   * TOOL_RESULT_KIND_REPLIED}) and the model is told the person replied, and what they wrote.
   */
  public void reply(String toolCallId, String text) {
    answer(Answers.reply("", toolCallId, text));
  }

  /**
   * Settles a client tool call ({@code SUSPEND_KIND_CLIENT_TOOL}) with the output of the tool the
   * caller ran; {@code isError} tells the model the tool failed.
   */
  public void sendToolOutput(String toolCallId, String content, boolean isError) {
    answer(Answers.toolOutput("", toolCallId, content, isError));
  }

  /** Settles a client tool call with a successful output. */
  public void sendToolOutput(String toolCallId, String content) {
    sendToolOutput(toolCallId, content, false);
  }

  /**
   * Approves a call that waits for approval ({@code SUSPEND_KIND_APPROVAL}). A client tool is then
   * suspended again, with the same id, as {@code SUSPEND_KIND_CLIENT_TOOL}, for its output.
   */
  public void approve(String toolCallId) {
    answer(Answers.approve("", toolCallId));
  }

  /** Rejects a call that waits for approval: the tool never runs; {@code reason} may be empty. */
  public void reject(String toolCallId, String reason) {
    answer(Answers.reject("", toolCallId, reason));
  }

  /**
   * Approves a call that waits for approval with edited arguments (a JSON object, checked against
   * the tool's schema; a bad one comes back as {@code answer_rejected}).
   */
  public void editArguments(String toolCallId, String argumentsJson) {
    answer(Answers.editArguments("", toolCallId, argumentsJson));
  }

  /** Half-closes the stream and cancels it: a disconnect. The run goes on on the server. */
  @Override
  public void close() {
    synchronized (lock) {
      if (!isClosed()) {
        requests.onCompleted();
      }
      super.close();
    }
  }
}

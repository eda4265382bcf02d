package dev.askuser.client;

import dev.askuser.v1.AgentServiceGrpc;
import dev.askuser.v1.Answer;
import dev.askuser.v1.Decline;
import dev.askuser.v1.RunAgentRequest;
import dev.askuser.v1.Selections;
import io.grpc.stub.StreamObserver;
import java.util.List;

/**
 * An open {@code RunAgent} stream: iterate it for the run's frames, answer its questions with
 * {@link #answerText}, {@link #answerSelections} or {@link #decline}.
 *
 * <p>The answer methods leave the answer's run id empty, which the server reads as this stream's
 * run. A bad answer does not fail the stream; it comes back as an {@code answer_rejected} frame and
 * the question stays answerable. Reading and answering may happen on different threads.
 * {@link #close()} disconnects; the run goes on without this stream and can be attached again.
 */
public final class Run extends FrameStream {
  private final Object sendLock = new Object();
  private final StreamObserver<RunAgentRequest> requests;
  private boolean closed;

  /** Opens the stream and sends its first frame ({@code start} or {@code attach}). */
  Run(AgentServiceGrpc.AgentServiceStub stub, RunAgentRequest firstFrame) {
    requests = stub.runAgent(receiver());
    requests.onNext(firstFrame);
  }

  /** Sends an answer frame as given: any run id, answer and {@code answer_id}. */
  public void answer(Answer answer) {
    synchronized (sendLock) {
      if (closed) {
        throw new IllegalStateException("the stream is closed");
      }
      requests.onNext(RunAgentRequest.newBuilder().setAnswer(answer).build());
    }
  }

  /** Answers a free-text question, or a single-select one with the exact label chosen. */
  public void answerText(String toolCallId, String text) {
    answer(Answer.newBuilder().setToolCallId(toolCallId).setText(text).build());
  }

  /** Answers a select question with the chosen labels, in the order they were chosen. */
  public void answerSelections(String toolCallId, List<String> labels) {
    answer(
        Answer.newBuilder()
            .setToolCallId(toolCallId)
            .setSelections(Selections.newBuilder().addAllLabels(labels))
            .build());
  }

  /** Declines to answer a question; {@code reason} (possibly empty) is passed on to the model. */
  public void decline(String toolCallId, String reason) {
    answer(
        Answer.newBuilder()
            .setToolCallId(toolCallId)
            .setDecline(Decline.newBuilder().setReason(reason))
            .build());
  }

  /** Half-closes the stream and cancels it: a disconnect. The run goes on on the server. */
  @Override
  public void close() {
    synchronized (sendLock) {
      if (!closed) {
        closed = true;
        requests.onCompleted();
      }
    }
    super.close();
  }
}

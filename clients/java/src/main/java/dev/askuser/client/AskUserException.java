package dev.askuser.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A call to the askuser server failed. Carries the gRPC status code and message and the rich error
 * details askuser sends: {@code google.rpc.ErrorInfo} (its {@link #reason()}) and {@code
 * google.rpc.BadRequest} (its {@link #fieldViolations()}).
 */
public final class AskUserException extends RuntimeException {
  private final Status.Code code;
  private final String statusMessage;
  private final Optional<ErrorInfo> errorInfo;
  private final List<BadRequest.FieldViolation> fieldViolations;

  private AskUserException(
      Status.Code code,
      String statusMessage,
      Optional<ErrorInfo> errorInfo,
      List<BadRequest.FieldViolation> fieldViolations,
      Throwable cause) {
    super(code + ": " + statusMessage, cause);
    this.code = code;
    this.statusMessage = statusMessage;
    this.errorInfo = errorInfo;
    this.fieldViolations = List.copyOf(fieldViolations);
  }

  /** Reads the status and its details from a failure gRPC reported. */
  static AskUserException from(Throwable failure) {
    Status status = Status.fromThrowable(failure);
    String message = status.getDescription() == null ? "" : status.getDescription();
    com.google.rpc.Status details = StatusProto.fromThrowable(failure);
    Optional<ErrorInfo> errorInfo = Optional.empty();
    List<BadRequest.FieldViolation> violations = new ArrayList<>();
    if (details != null) {
      for (Any detail : details.getDetailsList()) {
        if (detail.is(ErrorInfo.class)) {
          errorInfo = Optional.of(unpack(detail, ErrorInfo.class));
        } else if (detail.is(BadRequest.class)) {
          violations.addAll(unpack(detail, BadRequest.class).getFieldViolationsList());
        }
      }
    }
    return new AskUserException(status.getCode(), message, errorInfo, violations, failure);
  }

  /** A failure the client itself decides, e.g. a wait that ran out of time (DEADLINE_EXCEEDED). */
  static AskUserException local(Status status, String message) {
    return from(status.withDescription(message).asRuntimeException());
  }

  private static <T extends com.google.protobuf.Message> T unpack(Any detail, Class<T> type) {
    try {
      return detail.unpack(type);
    } catch (InvalidProtocolBufferException e) {
      // Any.is() matched the type URL, so only a corrupt payload gets here: the server broke the contract.
      throw new IllegalStateException("malformed " + type.getSimpleName() + " in error details", e);
    }
  }

  /**
   * Whether the call failed because the connection went away: {@code UNAVAILABLE}, or the {@code
   * UNKNOWN: channel closed} that grpc-java's Netty transport makes of a call caught on a
   * connection closing under it (a server killed mid-call). Either is safe to reconnect after.
   */
  boolean connectionLost() {
    if (code == Status.Code.UNAVAILABLE) {
      return true;
    }
    return code == Status.Code.UNKNOWN
        && (statusMessage.equals("channel closed")
            || Status.fromThrowable(getCause()).getCause()
                instanceof java.nio.channels.ClosedChannelException);
  }

  /** The gRPC status code, e.g. {@code FAILED_PRECONDITION}. */
  public Status.Code code() {
    return code;
  }

  /** The status message, in plain words. */
  public String statusMessage() {
    return statusMessage;
  }

  /** The {@code google.rpc.ErrorInfo} detail, when the server sent one. */
  public Optional<ErrorInfo> errorInfo() {
    return errorInfo;
  }

  /**
   * The {@code ErrorInfo} reason, e.g. {@code ALREADY_ANSWERED} ({@link Reasons} names them all);
   * empty when there is none.
   */
  public String reason() {
    return errorInfo.map(ErrorInfo::getReason).orElse("");
  }

  /** The {@code google.rpc.BadRequest} field violations, in the server's order. */
  public List<BadRequest.FieldViolation> fieldViolations() {
    return fieldViolations;
  }
}

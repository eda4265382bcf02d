package dev.askuser.client.conformance;

/** A scenario step did not go as the scenario says, or the runner cannot run it. */
final class ScenarioFailure extends RuntimeException {
  ScenarioFailure(String message) {
    super(message);
  }

  ScenarioFailure(String message, Throwable cause) {
    super(message, cause);
  }
}

package dev.askuser.client.conformance;

import dev.askuser.client.AskUserClient;

/**
 * The clients a scenario's steps call through: by default the conformance tenant's, with the key in
 * {@code ASKUSER_API_KEY} (no credentials when it is unset); for a step with {@code "as": "other"},
 * another tenant's, with {@code ASKUSER_OTHER_API_KEY}, made at its first use.
 */
final class Callers implements AutoCloseable {
  private final String target;
  private final AskUserClient main;
  private AskUserClient other;

  Callers(String target) {
    this.target = target;
    this.main = client(System.getenv("ASKUSER_API_KEY"));
  }

  private AskUserClient client(String apiKey) {
    AskUserClient.Builder builder = AskUserClient.builder(target);
    if (apiKey != null && !apiKey.isEmpty()) {
      builder.apiKey(apiKey);
    }
    return builder.build();
  }

  /** The conformance tenant's client. */
  AskUserClient main() {
    return main;
  }

  /** The client of a step's {@code as}: only {@code other} is defined, and it needs its key. */
  AskUserClient as(String caller) {
    if (!caller.equals("other")) {
      throw new ScenarioFailure("unknown caller '" + caller + "' (only \"other\" is defined)");
    }
    if (other == null) {
      String key = System.getenv("ASKUSER_OTHER_API_KEY");
      if (key == null || key.isEmpty()) {
        throw new ScenarioFailure("\"as\": \"other\" needs ASKUSER_OTHER_API_KEY");
      }
      other = client(key);
    }
    return other;
  }

  @Override
  public void close() {
    main.close();
    if (other != null) {
      other.close();
    }
  }
}

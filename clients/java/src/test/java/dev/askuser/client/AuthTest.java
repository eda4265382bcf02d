package dev.askuser.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.askuser.v1.Agent;
import dev.askuser.v1.RunAgentResponse;
import io.grpc.Status;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import javax.net.ssl.SSLException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Credentials and TLS against the servers test.sh is given: the plain one in ASKUSER_ADDR
 * (with --auth keys; ASKUSER_API_KEY is a key of it) and the mTLS one in ASKUSER_TLS_ADDR (its CA,
 * a client certificate and key, and a key of it in ASKUSER_TLS_*). A missing variable fails the
 * test that needs it: a run without TLS must not pass as tested.
 */
@Timeout(30)
class AuthTest {
  private static final List<String> CONFORMANCE_AGENTS = List.of(
      "checks", "deployer", "feed", "form", "free_text", "mcp_deployer", "parallel", "per_run", "pick", "questions", "status_check", "two_step");

  private static String env(String name) {
    String value = System.getenv(name);
    assertTrue(value != null && !value.isEmpty(), name + " must be set (see clients/java/test.sh)");
    return value;
  }

  private static Path envPath(String name) {
    return Path.of(env(name));
  }

  /** The mTLS server's builder with its CA and the client certificate. */
  private static AskUserClient.Builder mtls() {
    return AskUserClient.builder(env("ASKUSER_TLS_ADDR"))
        .trustedCertificates(envPath("ASKUSER_TLS_CA"))
        .clientCertificate(envPath("ASKUSER_TLS_CLIENT_CERT"), envPath("ASKUSER_TLS_CLIENT_KEY"));
  }

  private static List<String> agentIds(AskUserClient client) {
    return client.listAgents().stream().map(Agent::getAgentId).toList();
  }

  /**
   * The call's failure, which must have this code. Without retries: a failed TLS handshake is
   * UNAVAILABLE, which the default {@link Reconnect} policy would retry for 30 s.
   */
  private static AskUserException failure(AskUserClient.Builder builder, Function<AskUserClient, ?> call, Status.Code code) {
    try (AskUserClient client = builder.reconnect(Reconnect.OFF).build()) {
      AskUserException error = assertThrows(AskUserException.class, () -> call.apply(client));
      assertEquals(code, error.code(), error.getMessage());
      return error;
    }
  }

  @Test
  void theTokenProviderIsAskedAtTheStartOfEveryCallUnaryAndStreaming() {
    String key = env("ASKUSER_API_KEY");
    AtomicInteger calls = new AtomicInteger();
    try (AskUserClient client = AskUserClient.builder(env("ASKUSER_ADDR"))
        .tokenProvider(() -> {
          calls.incrementAndGet();
          return key;
        })
        .build()) {
      client.listAgents();
      client.listAgents();
      assertEquals(2, calls.get());
      String runId;
      try (Run run = client.startRun("free_text", "who asks?", Map.of())) {
        RunAgentResponse started = run.next();
        assertTrue(started.hasRunStarted(), started.toString());
        runId = started.getRunId();
      }
      assertEquals(3, calls.get(), "the RunAgent stream asked for its own token");
      client.cancelRun(runId, "");
      assertEquals(4, calls.get());
    }
  }

  @Test
  void eachCallSendsTheProvidersCurrentTokenSoARotatedTokenTakesEffectAtTheNextCall() {
    AtomicReference<String> token = new AtomicReference<>("ak_unknown_secret");
    try (AskUserClient client = AskUserClient.builder(env("ASKUSER_ADDR")).tokenProvider(token::get).build()) {
      AskUserException refused = assertThrows(AskUserException.class, client::listAgents);
      assertEquals(Status.Code.UNAUTHENTICATED, refused.code());
      assertEquals("INVALID_CREDENTIALS", refused.reason());
      token.set(env("ASKUSER_API_KEY"));
      assertEquals(CONFORMANCE_AGENTS, agentIds(client));
    }
  }

  @Test
  void aTokenProviderThatFailsFailsTheCallWithUnauthenticated() {
    AskUserClient.Builder builder = AskUserClient.builder(env("ASKUSER_ADDR")).tokenProvider(() -> {
      throw new IllegalStateException("the identity provider is down");
    });
    AskUserException error = failure(builder, AskUserClient::listAgents, Status.Code.UNAUTHENTICATED);
    assertTrue(error.statusMessage().contains("the identity provider is down"), error.statusMessage());
  }

  @Test
  void withoutCredentialsACallIsUnauthenticatedWithTheReasonMissingCredentials() {
    AskUserException error = failure(
        AskUserClient.builder(env("ASKUSER_ADDR")), client -> client.getRun("no-such-run"), Status.Code.UNAUTHENTICATED);
    assertEquals("MISSING_CREDENTIALS", error.reason());
  }

  @Test
  void anUnknownApiKeyFailsStreamsTooWithInvalidCredentials() {
    try (AskUserClient client = AskUserClient.builder(env("ASKUSER_ADDR")).apiKey("ak_unknown_secret").build();
        Run run = client.startRun("free_text", "hi", Map.of())) {
      AskUserException error = assertThrows(AskUserException.class, run::next);
      assertEquals(Status.Code.UNAUTHENTICATED, error.code());
      assertEquals("INVALID_CREDENTIALS", error.reason());
    }
  }

  @Test
  void overMtlsWithTheCaAClientCertificateAndAnApiKeyTheClientListsTheAgents() {
    try (AskUserClient client = mtls().apiKey(env("ASKUSER_TLS_API_KEY")).build()) {
      assertEquals(CONFORMANCE_AGENTS, agentIds(client));
    }
  }

  @Test
  void theServerNameCanBeOverriddenAndTheCertificateIsCheckedAgainstIt() {
    try (AskUserClient client = mtls().apiKey(env("ASKUSER_TLS_API_KEY")).overrideAuthority("localhost").build()) {
      assertEquals(CONFORMANCE_AGENTS, agentIds(client));
    }
    failure(
        mtls().apiKey(env("ASKUSER_TLS_API_KEY")).overrideAuthority("not-the-server.example"),
        AskUserClient::listAgents,
        Status.Code.UNAVAILABLE);
  }

  @Test
  void overMtlsWithoutTheApiKeyACallIsUnauthenticated() {
    AskUserException error = failure(mtls(), AskUserClient::listAgents, Status.Code.UNAUTHENTICATED);
    assertEquals("MISSING_CREDENTIALS", error.reason());
  }

  @Test
  void theTlsServerIsUnreachableWithTheWrongCaWithoutAClientCertificateOrInPlaintext() {
    String address = env("ASKUSER_TLS_ADDR");
    String key = env("ASKUSER_TLS_API_KEY");
    Path cert = envPath("ASKUSER_TLS_CLIENT_CERT");
    Path privateKey = envPath("ASKUSER_TLS_CLIENT_KEY");
    // The system's roots, which never signed the test CA's server certificate.
    assertFailedHandshake(AskUserClient.builder(address).apiKey(key).clientCertificate(cert, privateKey));
    // The client's own certificate as the only authority: it did not sign the server's either.
    assertFailedHandshake(
        AskUserClient.builder(address).apiKey(key).trustedCertificates(cert).clientCertificate(cert, privateKey));
    assertFailedHandshake(AskUserClient.builder(address).apiKey(key).trustedCertificates(envPath("ASKUSER_TLS_CA")));
    // In plaintext, the server's TLS bytes are no HTTP/2: grpc-java reports INTERNAL ("http2 exception").
    try (AskUserClient client = AskUserClient.builder(address).apiKey(key).reconnect(Reconnect.OFF).build()) {
      AskUserException error = assertThrows(AskUserException.class, client::listAgents);
      assertTrue(List.of(Status.Code.UNAVAILABLE, Status.Code.INTERNAL).contains(error.code()), error.getMessage());
    }
  }

  /** A call fails with UNAVAILABLE because the TLS handshake failed. */
  private static void assertFailedHandshake(AskUserClient.Builder builder) {
    AskUserException error = failure(builder, AskUserClient::listAgents, Status.Code.UNAVAILABLE);
    Throwable cause = error;
    while (cause != null && !(cause instanceof SSLException)) {
      cause = cause.getCause();
    }
    assertNotNull(cause, () -> "no SSLException among the causes of " + error);
  }

  @Test
  void anUnreadableTlsFileIsReportedWhenTheClientIsBuilt() {
    AskUserClient.Builder builder =
        AskUserClient.builder("127.0.0.1:1").trustedCertificates(Path.of("/no/such/ca.pem"));
    assertThrows(UncheckedIOException.class, builder::build);
  }
}

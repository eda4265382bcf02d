package dev.askuser.client;

import io.grpc.CallCredentials;
import io.grpc.Metadata;
import io.grpc.Status;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * Sends {@code authorization: Bearer <token>} on every call, asking the provider for the token at
 * the start of each call, so a provider that refreshes a JWT is used as it rotates.
 */
final class BearerToken extends CallCredentials {
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final Supplier<String> provider;

  BearerToken(Supplier<String> provider) {
    this.provider = provider;
  }

  @Override
  public void applyRequestMetadata(RequestInfo info, Executor appExecutor, MetadataApplier applier) {
    // The application's executor, not the transport's thread: a provider may block to fetch a token.
    appExecutor.execute(() -> {
      String token;
      try {
        token = provider.get();
      } catch (RuntimeException e) {
        applier.fail(Status.UNAUTHENTICATED.withDescription("the token provider failed: " + e).withCause(e));
        return;
      }
      if (token == null) {
        applier.fail(Status.UNAUTHENTICATED.withDescription("the token provider returned no token"));
        return;
      }
      Metadata headers = new Metadata();
      headers.put(AUTHORIZATION, "Bearer " + token);
      applier.apply(headers);
    });
  }
}

package dev.askuser.client;

import dev.askuser.v1.Agent;
import dev.askuser.v1.AgentServiceGrpc;
import dev.askuser.v1.Answer;
import dev.askuser.v1.ApprovalPolicy;
import dev.askuser.v1.AskUserInput;
import dev.askuser.v1.AskUserRequest;
import dev.askuser.v1.AttachRun;
import dev.askuser.v1.CancelRunRequest;
import dev.askuser.v1.ClaimCallRequest;
import dev.askuser.v1.GetRunRequest;
import dev.askuser.v1.ListAgentsRequest;
import dev.askuser.v1.ListRunsRequest;
import dev.askuser.v1.ListRunsResponse;
import dev.askuser.v1.ResumeRunRequest;
import dev.askuser.v1.RunAgentRequest;
import dev.askuser.v1.StartRun;
import dev.askuser.v1.SuspendKind;
import dev.askuser.v1.ToolDefinition;
import dev.askuser.v1.ToolServiceGrpc;
import dev.askuser.v1.WatchPendingCallsRequest;
import dev.askuser.v1.WatchRunRequest;
import io.grpc.CallCredentials;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A client of one askuser server: the {@code askuser.v1} {@code AgentService} and {@code
 * ToolService} over the generated gRPC stubs. Every failed call throws {@link AskUserException}.
 *
 * <pre>{@code
 * try (AskUserClient client = new AskUserClient("127.0.0.1:50051");
 *     Run run = client.startRun("deploy", "ship it", Map.of())) {
 *   for (RunAgentResponse frame : run) { ... run.answerText(toolCallId, "staging"); ... }
 * }
 * }</pre>
 *
 * <p>With credentials or TLS, build it with {@link #builder(String)}:
 *
 * <pre>{@code
 * AskUserClient client = AskUserClient.builder("askuser.example.com:443")
 *     .tls() // verified against the system's roots
 *     .apiKey(System.getenv("ASKUSER_API_KEY"))
 *     .build();
 * }</pre>
 */
public final class AskUserClient implements AutoCloseable {
  private final ManagedChannel channel;
  private final AgentServiceGrpc.AgentServiceStub agents;
  private final AgentServiceGrpc.AgentServiceBlockingStub agentsBlocking;
  private final ToolServiceGrpc.ToolServiceBlockingStub tools;

  /** Connects in plaintext to {@code target}, e.g. {@code "127.0.0.1:50051"}, without credentials. */
  public AskUserClient(String target) {
    this(ManagedChannelBuilder.forTarget(target).usePlaintext().build());
  }

  /** Uses a channel built by the caller (TLS, interceptors, ...); {@link #close()} shuts it down. */
  public AskUserClient(ManagedChannel channel) {
    this(channel, null);
  }

  /** Calls through {@code channel}, with {@code credentials} on every call unless null. */
  private AskUserClient(ManagedChannel channel, CallCredentials credentials) {
    this.channel = channel;
    this.agents = AgentServiceGrpc.newStub(channel).withCallCredentials(credentials);
    this.agentsBlocking = AgentServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
    this.tools = ToolServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials);
  }

  /** A builder of a client of {@code target} ({@code host:port}) with credentials and TLS options. */
  public static Builder builder(String target) {
    return new Builder(target);
  }

  /**
   * How to connect and who calls. Plaintext unless {@link #tls()}, {@link #trustedCertificates} or
   * {@link #clientCertificate} asks for TLS; no credentials unless {@link #apiKey} or {@link
   * #tokenProvider} gives them.
   */
  public static final class Builder {
    private final String target;
    private Supplier<String> tokenProvider;
    private boolean tls;
    private Path trustedCertificates;
    private Path clientCertificateChain;
    private Path clientPrivateKey;
    private String authority;

    private Builder(String target) {
      this.target = target;
    }

    /** Sends this API key ({@code ak_...}) as {@code authorization: Bearer <key>} on every call. */
    public Builder apiKey(String apiKey) {
      if (apiKey == null) {
        throw new IllegalArgumentException("apiKey is null");
      }
      return tokenProvider(() -> apiKey);
    }

    /**
     * Asks {@code provider} for the bearer token at the start of every call (e.g. a JWT it refreshes
     * before it expires), on the channel's executor; it may block. A provider that throws or returns
     * null fails the call with UNAUTHENTICATED. Replaces an {@link #apiKey}.
     */
    public Builder tokenProvider(Supplier<String> provider) {
      if (provider == null) {
        throw new IllegalArgumentException("tokenProvider is null");
      }
      this.tokenProvider = provider;
      return this;
    }

    /** Connects with TLS, verifying the server against the system's roots unless {@link #trustedCertificates}. */
    public Builder tls() {
      this.tls = true;
      return this;
    }

    /** Connects with TLS, trusting only the authorities in this PEM file. */
    public Builder trustedCertificates(Path caPem) {
      this.trustedCertificates = caPem;
      return tls();
    }

    /**
     * Connects with TLS and presents this client certificate (mTLS): the chain as PEM, leaf first,
     * and its private key as PEM in PKCS#8 ({@code BEGIN PRIVATE KEY}).
     */
    public Builder clientCertificate(Path certificateChainPem, Path privateKeyPem) {
      this.clientCertificateChain = certificateChainPem;
      this.clientPrivateKey = privateKeyPem;
      return tls();
    }

    /**
     * The server's name when it is not the host of the target: sent as {@code :authority} (and SNI),
     * and, with TLS, the name the server's certificate must carry.
     */
    public Builder overrideAuthority(String serverName) {
      this.authority = serverName;
      return this;
    }

    /**
     * Builds the client; the connection is made at the first call.
     *
     * @throws UncheckedIOException when a PEM file cannot be read
     */
    public AskUserClient build() {
      ManagedChannelBuilder<?> channel = Grpc.newChannelBuilder(target, channelCredentials());
      if (authority != null) {
        channel.overrideAuthority(authority);
      }
      return new AskUserClient(channel.build(), tokenProvider == null ? null : new BearerToken(tokenProvider));
    }

    private ChannelCredentials channelCredentials() {
      if (!tls) {
        return InsecureChannelCredentials.create();
      }
      TlsChannelCredentials.Builder credentials = TlsChannelCredentials.newBuilder();
      try {
        if (trustedCertificates != null) {
          credentials.trustManager(trustedCertificates.toFile());
        }
        if (clientCertificateChain != null) {
          credentials.keyManager(clientCertificateChain.toFile(), clientPrivateKey.toFile());
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read the TLS files", e);
      }
      return credentials.build();
    }
  }

  /** Starts a run of an agent on a new {@code RunAgent} stream. */
  public Run startRun(String agentId, String prompt, Map<String, String> metadata) {
    return startRun(
        StartRun.newBuilder().setAgentId(agentId).setPrompt(prompt).putAllMetadata(metadata).build());
  }

  /**
   * Starts a run with client tools for this run only, offered to the model beside the agent's own
   * tools (see {@link #clientTool}). Their calls arrive as {@code tool_call_suspended} frames of kind
   * {@code SUSPEND_KIND_CLIENT_TOOL} (after an approval when a tool asks for one); settle them with
   * {@link Run#sendToolOutput}. A bad tool fails the stream with INVALID_ARGUMENT naming the field,
   * e.g. {@code start.tools[0].parameters_json_schema}.
   */
  public Run startRun(
      String agentId, String prompt, Map<String, String> metadata, List<ToolDefinition> tools) {
    return startRun(
        StartRun.newBuilder()
            .setAgentId(agentId)
            .setPrompt(prompt)
            .putAllMetadata(metadata)
            .addAllTools(tools)
            .build());
  }

  /**
   * A client tool to give {@link #startRun(String, String, Map, List)}: its name, what it does,
   * the JSON Schema of its arguments as JSON text (empty: any JSON object), and whether its calls
   * wait for approval ({@code APPROVAL_POLICY_NEVER} or {@code APPROVAL_POLICY_ALWAYS}).
   */
  public static ToolDefinition clientTool(
      String name, String description, String parametersJsonSchema, ApprovalPolicy approval) {
    return ToolDefinition.newBuilder()
        .setName(name)
        .setDescription(description)
        .setParametersJsonSchema(parametersJsonSchema)
        .setApproval(approval)
        .build();
  }

  /** Starts a run as given, e.g. with a {@code question_ttl}. */
  public Run startRun(StartRun start) {
    return new Run(agents, RunAgentRequest.newBuilder().setStart(start).build());
  }

  /**
   * Attaches a new {@code RunAgent} stream to an existing run: replays its stored events after
   * {@code afterSequence} (0 replays all), then follows it live and takes answers.
   */
  public Run attach(String runId, long afterSequence) {
    AttachRun attach = AttachRun.newBuilder().setRunId(runId).setAfterSequence(afterSequence).build();
    return new Run(agents, RunAgentRequest.newBuilder().setAttach(attach).build());
  }

  /**
   * Applies one answer to a suspended run and streams what follows until the run waits again or
   * ends. A bad answer fails the stream with an {@link AskUserException}.
   */
  public FrameStream resumeRun(Answer answer) {
    FrameStream frames = new FrameStream();
    agents.resumeRun(ResumeRunRequest.newBuilder().setAnswer(answer).build(), frames.receiver());
    return frames;
  }

  /** Replays a run's stored events after {@code afterSequence}, then follows it until it ends. */
  public FrameStream watchRun(String runId, long afterSequence) {
    FrameStream frames = new FrameStream();
    WatchRunRequest request =
        WatchRunRequest.newBuilder().setRunId(runId).setAfterSequence(afterSequence).build();
    agents.watchRun(request, frames.receiver());
    return frames;
  }

  /**
   * Opens the pending-calls feed: every call pending now that passes the filters, then {@code
   * snapshot_done}, then new pending calls and settlements live, until {@link
   * PendingCallStream#close()}. Filters combine with AND; an empty list matches everything.
   */
  public PendingCallStream watchPendingCalls(
      List<String> agentIds, List<String> toolNames, List<SuspendKind> kinds) {
    return watchPendingCalls(
        WatchPendingCallsRequest.newBuilder()
            .addAllAgentIds(agentIds)
            .addAllToolNames(toolNames)
            .addAllKinds(kinds)
            .build());
  }

  /** Opens the pending-calls feed with the request as given. */
  public PendingCallStream watchPendingCalls(WatchPendingCallsRequest request) {
    PendingCallStream feed = new PendingCallStream();
    agents.watchPendingCalls(request, feed.receiver());
    return feed;
  }

  /**
   * Claims a pending call for {@code ttl} (1 s to 1 h; {@code null}: the server's default, 60 s), so
   * that other workers on the feed leave it alone; the same {@code claimant} renews its claim.
   * Returns when the claim lapses. Another claimant's live claim fails with FAILED_PRECONDITION
   * {@code ALREADY_CLAIMED} ({@link AskUserException#reason()}); a settled call with {@code
   * TOOL_CALL_NOT_PENDING}. A claim never blocks settling: the first settlement wins.
   */
  public Instant claimCall(String runId, String toolCallId, String claimant, Duration ttl) {
    ClaimCallRequest.Builder request =
        ClaimCallRequest.newBuilder().setRunId(runId).setToolCallId(toolCallId).setClaimant(claimant);
    if (ttl != null) {
      request.setTtl(
          com.google.protobuf.Duration.newBuilder().setSeconds(ttl.getSeconds()).setNanos(ttl.getNano()));
    }
    com.google.protobuf.Timestamp expires = unary(() -> agentsBlocking.claimCall(request.build()).getExpireTime());
    return Instant.ofEpochSecond(expires.getSeconds(), expires.getNanos());
  }

  /** One run with its pending tool calls (questions, approvals and client tool calls). */
  public dev.askuser.v1.Run getRun(String runId) {
    return unary(() -> agentsBlocking.getRun(GetRunRequest.newBuilder().setRunId(runId).build()).getRun());
  }

  /** One page of runs, newest first, filtered as the request says. */
  public ListRunsResponse listRuns(ListRunsRequest request) {
    return unary(() -> agentsBlocking.listRuns(request));
  }

  /** Cancels a suspended or working run and returns it; idempotent for a cancelled run. */
  public dev.askuser.v1.Run cancelRun(String runId, String reason) {
    CancelRunRequest request = CancelRunRequest.newBuilder().setRunId(runId).setReason(reason).build();
    return unary(() -> agentsBlocking.cancelRun(request).getRun());
  }

  /** The agents the server runs, ordered by id. */
  public List<Agent> listAgents() {
    return unary(() -> agentsBlocking.listAgents(ListAgentsRequest.getDefaultInstance()).getAgentsList());
  }

  /**
   * Runs the {@code ask_user} tool outside a run: validates the input and returns its fallback text.
   */
  public String askUser(AskUserInput input) {
    return unary(() -> tools.askUser(AskUserRequest.newBuilder().setInput(input).build()).getContent());
  }

  private static <T> T unary(Supplier<T> call) {
    try {
      return call.get();
    } catch (StatusRuntimeException e) {
      throw AskUserException.from(e);
    }
  }

  /** Shuts the channel down, cancelling calls still open. */
  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

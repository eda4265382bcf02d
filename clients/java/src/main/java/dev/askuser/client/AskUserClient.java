package dev.askuser.client;

import dev.askuser.v1.Agent;
import dev.askuser.v1.AgentServiceGrpc;
import dev.askuser.v1.Answer;
import dev.askuser.v1.ApprovalPolicy;
import dev.askuser.v1.AskRequest;
import dev.askuser.v1.AskUserInput;
import dev.askuser.v1.AskUserRequest;
import dev.askuser.v1.AttachRun;
import dev.askuser.v1.CancelRunRequest;
import dev.askuser.v1.ClaimCallRequest;
import dev.askuser.v1.GetRunRequest;
import dev.askuser.v1.HumanServiceGrpc;
import dev.askuser.v1.ListAgentsRequest;
import dev.askuser.v1.ListRunsRequest;
import dev.askuser.v1.ListRunsResponse;
import dev.askuser.v1.ResumeRunRequest;
import dev.askuser.v1.RunAgentRequest;
import dev.askuser.v1.RunAgentResponse;
import dev.askuser.v1.StartRun;
import dev.askuser.v1.SuspendKind;
import dev.askuser.v1.ToolCallSuspended;
import dev.askuser.v1.ToolDefinition;
import dev.askuser.v1.ToolServiceGrpc;
import dev.askuser.v1.WatchPendingCallsRequest;
import dev.askuser.v1.WatchRunRequest;
import io.grpc.CallCredentials;
import io.grpc.ChannelCredentials;
import io.grpc.Deadline;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.AbstractStub;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A client of one askuser server: the {@code askuser.v1} {@code AgentService}, {@code
 * ToolService} and {@code HumanService} over the generated gRPC stubs. Every failed call throws
 * {@link AskUserException}.
 *
 * <p>Asking a person from any code ({@code HumanService.Ask}): {@link #askHuman} and {@link
 * #requestApproval} ask and wait for the typed {@link HumanOutcome}; {@link #ask} returns a {@link
 * HumanRequest} to wait on later.
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
 *     .timeout(Duration.ofSeconds(10)) // the deadline of every call, unless withTimeout says otherwise
 *     .build();
 * }</pre>
 *
 * <p>Deadlines: a client-wide default ({@link Builder#timeout}) and a per-call one ({@code
 * client.withTimeout(Duration.ofSeconds(2)).getRun(id)}), each counted from the start of each call.
 * A call past its deadline fails with an {@link AskUserException} whose {@link
 * AskUserException#code() code} is {@code DEADLINE_EXCEEDED}; on a stream, the stream fails so.
 *
 * <p>Reconnection: a dropped connection ({@code UNAVAILABLE}, e.g. a server restart) is ridden out
 * under the {@link Reconnect} policy ({@link Builder#reconnect}, {@link #withReconnect}; {@link
 * Reconnect#DEFAULT} unless told otherwise): runs reattach and resend unacknowledged answers,
 * watches and the pending-calls feed reopen, and {@code getRun}, {@code listRuns}, {@code
 * listAgents} and {@code cancelRun} are retried, all within their deadlines.
 */
public final class AskUserClient implements AutoCloseable {
  private final ManagedChannel channel;
  /** False for a view made by {@link #withTimeout}: closing it leaves the channel to its owner. */
  private final boolean ownsChannel;
  private final AgentServiceGrpc.AgentServiceStub agents;
  private final AgentServiceGrpc.AgentServiceBlockingStub agentsBlocking;
  private final ToolServiceGrpc.ToolServiceBlockingStub tools;
  /** The deadline of every call, counted from its start; null: none. */
  private final Duration timeout;
  private final int streamBufferSize;
  private final Reconnect reconnect;

  /** This client's version, the Maven artifact's ({@code dev.askuser:askuser-client}). */
  public static final String VERSION = Version.read();

  /** Sent as the {@code user-agent} of every call, before gRPC's own. */
  private static final String USER_AGENT = "askuser-client-java/" + VERSION;

  /** Connects in plaintext to {@code target}, e.g. {@code "127.0.0.1:50051"}, without credentials. */
  public AskUserClient(String target) {
    this(ManagedChannelBuilder.forTarget(target).usePlaintext().userAgent(USER_AGENT).build());
  }

  /** Uses a channel built by the caller (TLS, interceptors, ...); {@link #close()} shuts it down. */
  public AskUserClient(ManagedChannel channel) {
    this(channel, null);
  }

  /** Calls through {@code channel}, with {@code credentials} on every call unless null. */
  private AskUserClient(ManagedChannel channel, CallCredentials credentials) {
    this(
        channel,
        true,
        AgentServiceGrpc.newStub(channel).withCallCredentials(credentials),
        AgentServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials),
        ToolServiceGrpc.newBlockingStub(channel).withCallCredentials(credentials),
        null,
        EventStream.DEFAULT_BUFFER_SIZE,
        Reconnect.DEFAULT);
  }

  private AskUserClient(
      ManagedChannel channel,
      boolean ownsChannel,
      AgentServiceGrpc.AgentServiceStub agents,
      AgentServiceGrpc.AgentServiceBlockingStub agentsBlocking,
      ToolServiceGrpc.ToolServiceBlockingStub tools,
      Duration timeout,
      int streamBufferSize,
      Reconnect reconnect) {
    if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
      throw new IllegalArgumentException("timeout must be positive, got " + timeout);
    }
    if (streamBufferSize < 1) {
      throw new IllegalArgumentException("streamBufferSize must be at least 1, got " + streamBufferSize);
    }
    this.channel = channel;
    this.ownsChannel = ownsChannel;
    this.agents = agents;
    this.agentsBlocking = agentsBlocking;
    this.tools = tools;
    this.timeout = timeout;
    this.streamBufferSize = streamBufferSize;
    this.reconnect = Objects.requireNonNull(reconnect, "reconnect");
  }

  /**
   * A view of this client whose calls each have {@code timeout} as their deadline (null: no
   * deadline), e.g. {@code client.withTimeout(Duration.ofSeconds(2)).listAgents()}. It shares the
   * channel and credentials; closing it does not close the channel.
   */
  public AskUserClient withTimeout(Duration timeout) {
    return new AskUserClient(channel, false, agents, agentsBlocking, tools, timeout, streamBufferSize, reconnect);
  }

  /**
   * A view of this client whose streams buffer at most {@code frames} messages ahead of their
   * reader (see {@link EventStream}). It shares the channel; closing it does not close the channel.
   */
  public AskUserClient withStreamBufferSize(int frames) {
    return new AskUserClient(channel, false, agents, agentsBlocking, tools, timeout, frames, reconnect);
  }

  /**
   * A view of this client that rides out dropped connections under {@code policy} ({@link
   * Reconnect#OFF}: not at all). It shares the channel; closing it does not close the channel.
   */
  public AskUserClient withReconnect(Reconnect policy) {
    return new AskUserClient(channel, false, agents, agentsBlocking, tools, timeout, streamBufferSize, policy);
  }

  /** How this client rides out dropped connections. */
  public Reconnect reconnect() {
    return reconnect;
  }

  /** The deadline of each call, counted from its start, if there is one. */
  public Optional<Duration> timeout() {
    return Optional.ofNullable(timeout);
  }

  /** How many messages each stream buffers at most ahead of its reader. */
  public int streamBufferSize() {
    return streamBufferSize;
  }

  /** The stub with this client's deadline, counted from now: call it at once. */
  private <S extends AbstractStub<S>> S withDeadline(S stub) {
    return timeout == null ? stub : stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS);
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
    private Duration timeout;
    private int streamBufferSize = EventStream.DEFAULT_BUFFER_SIZE;
    private Reconnect reconnect = Reconnect.DEFAULT;

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
     * The deadline of every call (unary calls and streams alike), counted from the start of each
     * call; none by default. Override it per call with {@link AskUserClient#withTimeout}, e.g.
     * {@code withTimeout(null)} for a run that may wait long for its answers.
     */
    public Builder timeout(Duration timeout) {
      if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
        throw new IllegalArgumentException("timeout must be positive, got " + timeout);
      }
      this.timeout = timeout;
      return this;
    }

    /**
     * How many messages each stream buffers at most ahead of its reader ({@value
     * EventStream#DEFAULT_BUFFER_SIZE} by default); past it, the server is asked for no more until
     * the reader catches up.
     */
    public Builder streamBufferSize(int frames) {
      if (frames < 1) {
        throw new IllegalArgumentException("streamBufferSize must be at least 1, got " + frames);
      }
      this.streamBufferSize = frames;
      return this;
    }

    /**
     * How the client rides out a dropped connection, e.g. a server restart ({@link
     * Reconnect#DEFAULT} unless told otherwise; {@link Reconnect#OFF} turns it off): runs reattach,
     * watches and the pending-calls feed reopen, idempotent unary calls are retried.
     */
    public Builder reconnect(Reconnect policy) {
      this.reconnect = Objects.requireNonNull(policy, "reconnect");
      return this;
    }

    /**
     * Builds the client; the connection is made at the first call.
     *
     * @throws UncheckedIOException when a PEM file cannot be read
     */
    public AskUserClient build() {
      ManagedChannelBuilder<?> channel = Grpc.newChannelBuilder(target, channelCredentials()).userAgent(USER_AGENT);
      if (authority != null) {
        channel.overrideAuthority(authority);
      }
      AskUserClient client =
          new AskUserClient(channel.build(), tokenProvider == null ? null : new BearerToken(tokenProvider));
      return new AskUserClient(
          client.channel, true, client.agents, client.agentsBlocking, client.tools, timeout, streamBufferSize, reconnect);
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
    return new Run(withDeadline(agents), RunAgentRequest.newBuilder().setStart(start).build(), streamBufferSize, reconnect, channel);
  }

  /**
   * Attaches a new {@code RunAgent} stream to an existing run: replays its stored events after
   * {@code afterSequence} (0 replays all), then follows it live and takes answers.
   */
  public Run attach(String runId, long afterSequence) {
    AttachRun attach = AttachRun.newBuilder().setRunId(runId).setAfterSequence(afterSequence).build();
    return new Run(withDeadline(agents), RunAgentRequest.newBuilder().setAttach(attach).build(), streamBufferSize, reconnect, channel);
  }

  /**
   * Applies one answer to a suspended run and streams what follows until the run waits again or
   * ends. A bad answer fails the stream with an {@link AskUserException}.
   */
  public FrameStream resumeRun(Answer answer) {
    FrameStream frames = new FrameStream(streamBufferSize);
    withDeadline(agents).resumeRun(ResumeRunRequest.newBuilder().setAnswer(answer).build(), frames.receiver());
    return frames;
  }

  /**
   * Replays a run's stored events after {@code afterSequence}, then follows it until it ends;
   * dropped with {@code UNAVAILABLE}, it opens again after the last sequence it delivered.
   */
  public FrameStream watchRun(String runId, long afterSequence) {
    return new WatchedRun(withDeadline(agents), runId, afterSequence, streamBufferSize, backoff());
  }

  /** The backoff of one call or stream under this client's policy; null when it does not reconnect. */
  private Backoff backoff() {
    return reconnect.enabled() ? new Backoff(reconnect, channel) : null;
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
    return new PendingCallStream(withDeadline(agents), request, streamBufferSize, backoff());
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
    com.google.protobuf.Timestamp expires = unary(() -> withDeadline(agentsBlocking).claimCall(request.build()).getExpireTime());
    return Instant.ofEpochSecond(expires.getSeconds(), expires.getNanos());
  }

  /** One run with its pending tool calls (questions, approvals and client tool calls). */
  public dev.askuser.v1.Run getRun(String runId) {
    GetRunRequest request = GetRunRequest.newBuilder().setRunId(runId).build();
    return retried(withDeadline(agentsBlocking), stub -> stub.getRun(request).getRun());
  }

  /** One page of runs, newest first, filtered as the request says. */
  public ListRunsResponse listRuns(ListRunsRequest request) {
    return retried(withDeadline(agentsBlocking), stub -> stub.listRuns(request));
  }

  /** Cancels a suspended or working run and returns it; idempotent for a cancelled run. */
  public dev.askuser.v1.Run cancelRun(String runId, String reason) {
    CancelRunRequest request = CancelRunRequest.newBuilder().setRunId(runId).setReason(reason).build();
    return retried(withDeadline(agentsBlocking), stub -> stub.cancelRun(request).getRun());
  }

  /** The agents the server runs, ordered by id. */
  public List<Agent> listAgents() {
    return retried(
        withDeadline(agentsBlocking), stub -> stub.listAgents(ListAgentsRequest.getDefaultInstance()).getAgentsList());
  }

  /**
   * Runs the {@code ask_user} tool outside a run: validates the input and returns its fallback text.
   */
  public String askUser(AskUserInput input) {
    return unary(() -> withDeadline(tools).askUser(AskUserRequest.newBuilder().setInput(input).build()).getContent());
  }

  /**
   * Asks a person from code outside any run ({@code HumanService.Ask}): creates the request (a run
   * of no agent holding one call) and returns once its call waits for someone, with a handle to
   * {@link HumanRequest#await() await} the outcome. The request reaches people as a run's calls do
   * (the inbox, {@code askuser pending}, the pending-calls feed, webhooks) and is settled once.
   *
   * <p>Without a {@link AskOptions#requestId request id} one is generated (a UUID); asking again
   * with the same id creates nothing and follows the same request. A dropped connection is ridden
   * out under the client's {@link Reconnect} policy (the same {@code Ask} again until the run id is
   * known, then {@code WatchRun}). The client's deadline ({@link #withTimeout}) counts from here
   * and bounds the waiting that follows too.
   *
   * @throws AskUserException e.g. {@code INVALID_ARGUMENT} with a field violation naming the bad
   *     field ({@code question.question}, {@code approval.tool_name}, ...), {@code PERMISSION_DENIED}
   *     without the {@code asks:create} scope
   */
  public HumanRequest ask(AskOptions options) {
    AskRequest request = options.toRequest();
    if (request.getRequestId().isEmpty()) {
      request = request.toBuilder().setRequestId(UUID.randomUUID().toString()).build();
    }
    HumanServiceGrpc.HumanServiceStub humans =
        withDeadline(HumanServiceGrpc.newStub(channel).withCallCredentials(agents.getCallOptions().getCredentials()));
    AskStream stream = new AskStream(humans, agents, request, streamBufferSize, backoff());
    boolean approval = request.hasApproval();
    String argumentsJson = request.getApproval().getArgumentsJson();
    try {
      String toolCallId = "";
      while (stream.hasNext()) {
        RunAgentResponse frame = stream.next();
        switch (frame.getEventCase()) {
          case TOOL_CALL -> toolCallId = frame.getToolCall().getToolCallId();
          case TOOL_CALL_SUSPENDED -> {
            ToolCallSuspended suspended = frame.getToolCallSuspended();
            return new HumanRequest(this, stream, frame.getRunId(), suspended.getToolCallId(),
                request.getRequestId(), suspended, approval, argumentsJson);
          }
          case TOOL_RESULT, RUN_COMPLETED, RUN_CANCELLED, RUN_FAILED -> {
            // Settled before it was seen waiting (a retry of an old request): the outcome is ready.
            if (toolCallId.isEmpty() && frame.hasToolResult()) {
              toolCallId = frame.getToolResult().getToolCallId();
            }
            return new HumanRequest(this, stream, frame.getRunId(), toolCallId,
                request.getRequestId(), null, approval, argumentsJson);
          }
          default -> {}
        }
      }
      if (stream.runId() != null) {
        return new HumanRequest(this, stream, stream.runId(), toolCallId, request.getRequestId(), null, approval, argumentsJson);
      }
      throw new IllegalStateException("the request's stream ended before it started");
    } catch (RuntimeException e) {
      stream.close();
      throw e;
    }
  }

  /**
   * Asks a person and waits for the answer: {@code ask(options).await()}. The outcome's kind is
   * {@code TEXT}, {@code SELECTIONS}, {@code FORM}, {@code DECLINED}, {@code REPLIED}, {@code
   * EXPIRED} or {@code CANCELLED} (for an approval, see {@link #requestApproval}).
   */
  public HumanOutcome askHuman(AskOptions options) {
    try (HumanRequest request = ask(options)) {
      return request.await();
    }
  }

  /** Asks a person a free-text question and waits for the answer. */
  public HumanOutcome askHuman(String question) {
    return askHuman(AskOptions.question(question));
  }

  /**
   * Asks a person to approve a tool call before the caller runs it, and waits for the decision:
   * {@code APPROVED} (run it with {@link HumanOutcome#arguments()}), {@code EDITED} (run it with the
   * approver's {@link HumanOutcome#arguments()}), {@code REJECTED} (with a {@link
   * HumanOutcome#reason()}), {@code EXPIRED} or {@code CANCELLED}. askuser never runs the tool.
   *
   * @param arguments the call's arguments, plain values (maps, lists, strings, numbers, booleans, null)
   * @param reason why approval is asked, shown to the approver (may be empty)
   */
  public HumanOutcome requestApproval(String toolName, Map<String, ?> arguments, String reason) {
    return askHuman(AskOptions.approval(toolName, arguments, reason));
  }

  /** {@link #requestApproval(String, Map, String)} with the arguments as JSON text (an object). */
  public HumanOutcome requestApproval(String toolName, String argumentsJson, String reason) {
    return askHuman(AskOptions.approvalJson(toolName, argumentsJson, reason));
  }

  /**
   * {@link #requestApproval(String, Map, String)} with every option: {@code
   * AskOptions.approval(...)} with a context, assignees, a ttl, a request id.
   */
  public HumanOutcome requestApproval(AskOptions approval) {
    if (!approval.toRequest().hasApproval()) {
      throw new IllegalArgumentException("requestApproval takes AskOptions.approval(...), not a " + approval.toRequest().getCallCase());
    }
    return askHuman(approval);
  }

  /** {@link #ask} without blocking, on a thread of its own: the future fails with the {@link AskUserException}. */
  public CompletableFuture<HumanRequest> askAsync(AskOptions options) {
    return onThread(() -> ask(options), () -> {});
  }

  /**
   * {@link #askHuman(AskOptions)} without blocking, on a thread of its own: the future fails with the
   * {@link AskUserException}; cancelling it stops following the request (which stays pending).
   */
  public CompletableFuture<HumanOutcome> askHumanAsync(AskOptions options) {
    AtomicReference<HumanRequest> asked = new AtomicReference<>();
    AtomicBoolean cancelled = new AtomicBoolean();
    return onThread(
        () -> {
          HumanRequest request = ask(options);
          asked.set(request);
          if (cancelled.get()) {
            request.close();
          }
          try (request) {
            return request.await();
          }
        },
        () -> {
          cancelled.set(true);
          HumanRequest request = asked.get();
          if (request != null) {
            request.close();
          }
        });
  }

  /** {@link #requestApproval(String, Map, String)} without blocking, as {@link #askHumanAsync}. */
  public CompletableFuture<HumanOutcome> requestApprovalAsync(String toolName, Map<String, ?> arguments, String reason) {
    return askHumanAsync(AskOptions.approval(toolName, arguments, reason));
  }

  /**
   * Runs {@code work} on a daemon thread of its own; the future completes with its result or fails
   * with what it threw. Cancelling the future runs {@code onCancel}.
   */
  static <T> CompletableFuture<T> onThread(Supplier<T> work, Runnable onCancel) {
    CompletableFuture<T> future = new CompletableFuture<>();
    future.whenComplete((ignored, failure) -> {
      if (future.isCancelled()) {
        onCancel.run();
      }
    });
    Thread thread = new Thread(() -> {
      try {
        future.complete(work.get());
      } catch (RuntimeException e) {
        future.completeExceptionally(e);
      }
    }, "askuser-ask");
    thread.setDaemon(true);
    thread.start();
    return future;
  }

  /** {@link #getRun} without blocking: the future fails with an {@link AskUserException}. */
  public CompletableFuture<dev.askuser.v1.Run> getRunAsync(String runId) {
    AgentServiceGrpc.AgentServiceStub stub = withDeadline(agents);
    return unaryAsync(
        stub,
        stub::getRun,
        GetRunRequest.newBuilder().setRunId(runId).build(),
        response -> response.getRun());
  }

  /** {@link #listRuns} without blocking: the future fails with an {@link AskUserException}. */
  public CompletableFuture<ListRunsResponse> listRunsAsync(ListRunsRequest request) {
    AgentServiceGrpc.AgentServiceStub stub = withDeadline(agents);
    return unaryAsync(stub, stub::listRuns, request, response -> response);
  }

  /** {@link #cancelRun} without blocking: the future fails with an {@link AskUserException}. */
  public CompletableFuture<dev.askuser.v1.Run> cancelRunAsync(String runId, String reason) {
    AgentServiceGrpc.AgentServiceStub stub = withDeadline(agents);
    return unaryAsync(
        stub,
        stub::cancelRun,
        CancelRunRequest.newBuilder().setRunId(runId).setReason(reason).build(),
        response -> response.getRun());
  }

  /** {@link #listAgents} without blocking: the future fails with an {@link AskUserException}. */
  public CompletableFuture<List<Agent>> listAgentsAsync() {
    AgentServiceGrpc.AgentServiceStub stub = withDeadline(agents);
    return unaryAsync(
        stub,
        stub::listAgents,
        ListAgentsRequest.getDefaultInstance(),
        response -> response.getAgentsList());
  }

  /**
   * Starts an idempotent unary call on the async stub (whose deadline covers every attempt),
   * retried on UNAVAILABLE under the policy; the future completes on a gRPC thread (chain with the
   * {@code *Async} methods of {@link CompletableFuture} to move off it).
   */
  private <ReqT, RespT, T> CompletableFuture<T> unaryAsync(
      AgentServiceGrpc.AgentServiceStub stub,
      BiConsumer<ReqT, StreamObserver<RespT>> call,
      ReqT request,
      Function<RespT, T> result) {
    CompletableFuture<T> future = new CompletableFuture<>();
    attemptAsync(stub.getCallOptions().getDeadline(), backoff(), call, request, result, future);
    return future;
  }

  private static <ReqT, RespT, T> void attemptAsync(
      Deadline deadline,
      Backoff backoff,
      BiConsumer<ReqT, StreamObserver<RespT>> call,
      ReqT request,
      Function<RespT, T> result,
      CompletableFuture<T> future) {
    call.accept(
        request,
        new StreamObserver<RespT>() {
          @Override
          public void onNext(RespT response) {
            future.complete(result.apply(response));
          }

          @Override
          public void onError(Throwable failure) {
            AskUserException error = AskUserException.from(failure);
            Optional<Duration> wait =
                backoff == null ? Optional.empty() : backoff.next(error, deadline);
            if (wait.isEmpty()) {
              future.completeExceptionally(error);
              return;
            }
            CompletableFuture.delayedExecutor(wait.get().toNanos(), TimeUnit.NANOSECONDS)
                .execute(() -> {
                  backoff.reconnectNow();
                  attemptAsync(deadline, backoff, call, request, result, future);
                });
          }

          @Override
          public void onCompleted() {
            if (!future.isDone()) {
              future.completeExceptionally(new IllegalStateException("the server sent no response"));
            }
          }
        });
  }

  /**
   * Runs an idempotent unary call on {@code stub} (whose deadline covers every attempt), again on
   * UNAVAILABLE under the policy.
   */
  private <T> T retried(
      AgentServiceGrpc.AgentServiceBlockingStub stub, Function<AgentServiceGrpc.AgentServiceBlockingStub, T> call) {
    Backoff backoff = backoff();
    while (true) {
      try {
        return call.apply(stub);
      } catch (StatusRuntimeException e) {
        AskUserException error = AskUserException.from(e);
        if (backoff == null || !backoff.await(error, stub.getCallOptions().getDeadline())) {
          throw error;
        }
      }
    }
  }

  private static <T> T unary(Supplier<T> call) {
    try {
      return call.get();
    } catch (StatusRuntimeException e) {
      throw AskUserException.from(e);
    }
  }

  /**
   * Shuts the channel down, cancelling calls still open, unless this is a view made by {@link
   * #withTimeout} or {@link #withStreamBufferSize} (their channel belongs to the client they came
   * from): then it does nothing.
   */
  @Override
  public void close() {
    if (!ownsChannel) {
      return;
    }
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

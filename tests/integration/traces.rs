//! Traces over OTLP, received by an OTLP/gRPC receiver this test runs (the collector's trace
//! service, from `opentelemetry-proto`): a run started with a `traceparent`, suspended, the server
//! restarted, then answered from another connection with a trace of its own. The RPC spans belong
//! to their callers' traces; every step, model and tool span of the run, before and after the
//! restart, belongs to the trace the run started in, and the step the answer caused links to the
//! answer's RPC span.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use askuser::proto::v1 as pb;
use askuser::proto::v1::run_agent_request::Frame;
use askuser::proto::v1::run_agent_response::Event;
use common::{FRAME_TIMEOUT, Server, collect_frames, report_figures, scripted_agent, text_answer};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};

/// The spans received so far.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<Span>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let spans = request
            .into_inner()
            .resource_spans
            .into_iter()
            .flat_map(|resource| resource.scope_spans)
            .flat_map(|scope| scope.spans);
        self.spans.lock().expect("spans").extend(spans);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

impl Receiver {
    /// Serves on a free port; returns its endpoint.
    async fn start(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let service = TraceServiceServer::new(self.clone());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(TcpListenerStream::new(listener)),
        );
        endpoint
    }

    fn spans(&self) -> Vec<Span> {
        self.spans.lock().expect("spans").clone()
    }

    /// Waits until a span satisfies `found` (exports come in batches, a few a second).
    async fn wait_for(&self, what: &str, found: impl Fn(&Span) -> bool) {
        tokio::time::timeout(FRAME_TIMEOUT, async {
            while !self.spans().iter().any(&found) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {what} span was exported"));
    }
}

/// A span's string or integer attribute, as text.
fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key == key)
        .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
        .map(|value| match value {
            Value::StringValue(text) => text.clone(),
            Value::IntValue(number) => number.to_string(),
            other => format!("{other:?}"),
        })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A request carrying a W3C `traceparent` of `trace_id` and `span_id`.
fn traced<T>(message: T, trace_id: &str, span_id: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    let traceparent = format!("00-{trace_id}-{span_id}-01");
    request.metadata_mut().insert(
        "traceparent",
        traceparent.parse().expect("traceparent metadata"),
    );
    request
}

const START_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const START_PARENT: &str = "00f067aa0ba902b7";
const ANSWER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const ANSWER_PARENT: &str = "b7ad6b7169203331";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_spans_share_its_trace_across_a_suspension_and_a_restart() {
    let receiver = Receiver::default();
    let endpoint = receiver.start().await;
    let agents = scripted_agent(
        "asker",
        &[
            r#"ask = [{ question = "Which region?" }]"#,
            r#"say = "Deploying to {{answer.1}}""#,
        ],
    );
    let mut server = Server::process_with_env(
        Some(&agents),
        &["--otlp-endpoint", &endpoint],
        // Batches every 50 ms, so spans arrive while the test waits.
        &[("OTEL_BSP_SCHEDULE_DELAY", "50")],
    );

    // Start the run in the caller's trace, and leave it waiting.
    let (sender, frames) = tokio::sync::mpsc::channel(4);
    sender
        .send(pb::RunAgentRequest {
            frame: Some(Frame::Start(pb::StartRun {
                agent_id: "asker".into(),
                prompt: "deploy".into(),
                ..Default::default()
            })),
        })
        .await
        .expect("send start");
    let mut client = server.agents().await;
    let mut stream = client
        .run_agent(traced(
            ReceiverStream::new(frames),
            START_TRACE,
            START_PARENT,
        ))
        .await
        .expect("start run")
        .into_inner();
    let (run_id, tool_call_id) = loop {
        let frame = tokio::time::timeout(FRAME_TIMEOUT, stream.message())
            .await
            .expect("a frame in time")
            .expect("stream")
            .expect("the run suspends before the stream ends");
        if let Some(Event::ToolCallSuspended(suspended)) = frame.event {
            break (frame.run_id, suspended.tool_call_id);
        }
    };
    drop(stream);
    drop(sender);
    // The start's RPC span ends with its stream; once it and the first step are exported, the
    // server is killed (no shutdown flush) and started again on the same data.
    receiver
        .wait_for("RunAgent", |span| {
            span.name == "askuser.v1.AgentService/RunAgent"
        })
        .await;
    receiver
        .wait_for("first step", |span| {
            span.name == "askuser.step" && attribute(span, "askuser.turn").as_deref() == Some("0")
        })
        .await;
    server.restart();

    // Answer from another connection, in another trace.
    let mut client = server.agents().await;
    let mut resumed = client
        .resume_run(traced(
            pb::ResumeRunRequest {
                answer: Some(text_answer(&run_id, &tool_call_id, "eu-west")),
            },
            ANSWER_TRACE,
            ANSWER_PARENT,
        ))
        .await
        .expect("resume")
        .into_inner();
    let frames = collect_frames(&mut resumed).await;
    assert!(
        frames
            .iter()
            .any(|frame| matches!(&frame.event, Some(Event::RunCompleted(done)) if done.output_text == "Deploying to eu-west")),
        "{frames:?}"
    );
    // SIGTERM: the server exports what it still holds before it exits.
    assert!(server.terminate(), "the server shuts down cleanly");

    let spans = receiver.spans();
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let [start] = named("askuser.v1.AgentService/RunAgent")[..] else {
        panic!("one RunAgent span: {spans:#?}");
    };
    assert_eq!(
        hex(&start.trace_id),
        START_TRACE,
        "the RPC joins its caller's trace"
    );
    assert_eq!(hex(&start.parent_span_id), START_PARENT);
    assert_eq!(attribute(start, "rpc.system").as_deref(), Some("grpc"));
    let [resume] = named("askuser.v1.AgentService/ResumeRun")[..] else {
        panic!("one ResumeRun span: {spans:#?}");
    };
    assert_eq!(
        hex(&resume.trace_id),
        ANSWER_TRACE,
        "a later RPC stays in its caller's trace"
    );
    assert_eq!(hex(&resume.parent_span_id), ANSWER_PARENT);

    // The run's work, before and after the restart, is the start's trace.
    let steps = named("askuser.step");
    let turns: Vec<String> = steps
        .iter()
        .filter_map(|step| attribute(step, "askuser.turn"))
        .collect();
    assert!(
        turns.contains(&"0".to_owned()) && turns.contains(&"1".to_owned()),
        "a step before and one after the answer: {turns:?}"
    );
    for span in steps
        .iter()
        .chain(named("askuser.model").iter())
        .chain(named("askuser.tool").iter())
    {
        assert_eq!(
            hex(&span.trace_id),
            START_TRACE,
            "{} is in the run's trace",
            span.name
        );
    }
    for step in &steps {
        assert_eq!(
            attribute(step, "askuser.run_id").as_deref(),
            Some(run_id.as_str())
        );
    }
    let first_step = steps
        .iter()
        .find(|step| attribute(step, "askuser.turn").as_deref() == Some("0"))
        .expect("the first step");
    assert_eq!(
        first_step.parent_span_id, start.span_id,
        "the first step is a child of the start's RPC span"
    );
    // The step after the answer is a child of the same stored context, and links to the answer.
    let answered_step = steps
        .iter()
        .find(|step| attribute(step, "askuser.turn").as_deref() == Some("1"))
        .expect("the step after the answer");
    assert_eq!(answered_step.parent_span_id, start.span_id);
    assert!(
        answered_step
            .links
            .iter()
            .any(|link| link.trace_id == resume.trace_id && link.span_id == resume.span_id),
        "the step links to the ResumeRun span: {:?}",
        answered_step.links
    );

    let models = named("askuser.model");
    assert_eq!(models.len(), 2, "one model call per step: {models:#?}");
    for model in &models {
        assert_eq!(
            attribute(model, "gen_ai.system").as_deref(),
            Some("scripted")
        );
        assert_eq!(
            attribute(model, "gen_ai.request.model").as_deref(),
            Some("scripted")
        );
    }
    let tools = named("askuser.tool");
    let [ask] = tools[..] else {
        panic!("one tool span: {tools:#?}");
    };
    assert_eq!(
        attribute(ask, "askuser.tool.name").as_deref(),
        Some("ask_user")
    );
    assert_eq!(
        attribute(ask, "askuser.tool.kind").as_deref(),
        Some("ask_user")
    );
    assert_eq!(
        attribute(ask, "askuser.tool.outcome").as_deref(),
        Some("suspended")
    );
    assert_eq!(
        attribute(ask, "askuser.tool_call_id").as_deref(),
        Some(tool_call_id.as_str())
    );
    assert_eq!(
        ask.parent_span_id, first_step.span_id,
        "the tool span is in its step"
    );

    report_figures(
        "traces",
        &[
            ("spans", spans.len() as u64),
            (
                "in_run_trace",
                spans
                    .iter()
                    .filter(|s| hex(&s.trace_id) == START_TRACE)
                    .count() as u64,
            ),
            ("steps", steps.len() as u64),
            ("model_calls", models.len() as u64),
            ("tool_calls", tools.len() as u64),
        ],
    );
}

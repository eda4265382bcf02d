//! A runtime on a real SQLite store in a temporary directory, with scripted agents, for the
//! runtime's unit tests.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tempfile::TempDir;

use super::tools::Tool;
use super::{
    AgentDefinition, AnswerAck, AnswerRequest, AskUserLimits, FollowUntil, Runtime, RuntimeConfig,
    RuntimeError, StartRunRequest, WebhookSettings,
};
use crate::domain::{AnswerInput, AuthMethod, Principal, RunRecord, Scope, ToolDefinition};
use crate::model::{ScriptedModel, ScriptedTurn};
use crate::store::{RunStore, SqliteStore, Synchronous};

/// The settings of a test runtime: the server's defaults, short where a test waits.
pub(super) fn config() -> RuntimeConfig {
    RuntimeConfig {
        limits: AskUserLimits::default(),
        max_question_ttl: Duration::from_secs(3600),
        retention: Duration::from_secs(3600),
        prune_interval: Duration::from_secs(3600),
        max_run_age: None,
        lease_ttl: Duration::from_secs(30),
        max_tool_output_bytes: 65_536,
        max_step_attempts: 3,
        max_running_steps: 8,
        max_model_requests: 8,
        webhooks: WebhookSettings::default(),
        metrics: false,
    }
}

/// An agent with `ask_user` that plays `turns` (TOML, one `[[turn]]` table per model turn).
pub(super) fn agent(id: &str, turns: &str) -> AgentDefinition {
    #[derive(serde::Deserialize)]
    struct Script {
        turn: Vec<ScriptedTurn>,
    }
    let script: Script = toml::from_str(turns).expect("a script");
    AgentDefinition {
        mcp: Vec::new(),
        id: id.to_owned(),
        name: id.to_owned(),
        instructions: String::new(),
        tools: vec![Arc::new(
            Tool::ask_user(&AskUserLimits::default()).expect("ask_user"),
        )],
        max_steps: 10,
        max_concurrent_steps: None,
        max_tokens_per_run: None,
        question_ttl: None,
        model: Arc::new(ScriptedModel::new(script.turn)),
        tenants: Vec::new(),
        assignees: Vec::new(),
        webhooks: Vec::new(),
        offered_over_mcp: false,
    }
}

/// A principal of tenant `acme` with an API key's identity and `scopes`.
pub(super) fn principal(subject: &str, scopes: &[Scope]) -> Principal {
    Principal {
        tenant: "acme".into(),
        subject: subject.into(),
        scopes: scopes.to_vec(),
        groups: Vec::new(),
        method: AuthMethod::ApiKey,
        link: None,
    }
}

/// A runtime on a fresh SQLite file; the directory goes with it.
pub(super) struct Harness {
    pub(super) runtime: Runtime,
    pub(super) store: Arc<dyn RunStore>,
    _dir: TempDir,
}

impl Harness {
    /// Answers call `call` of `run` as `by`, as an API request would.
    pub(super) async fn answer(
        &self,
        run: &RunRecord,
        call: &str,
        answer: AnswerInput,
        answer_id: &str,
        by: &Principal,
    ) -> Result<AnswerAck, RuntimeError> {
        self.runtime
            .answer(AnswerRequest {
                run_id: run.run_id.clone(),
                tool_call_id: call.to_owned(),
                answer,
                answer_id: answer_id.to_owned(),
                principal: by.clone(),
            })
            .await
    }

    pub(super) fn new(agents: Vec<AgentDefinition>, config: RuntimeConfig) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn RunStore> = Arc::new(
            SqliteStore::open(&dir.path().join("askuser.sqlite3"), Synchronous::Normal)
                .expect("a SQLite store"),
        );
        Self {
            runtime: Runtime::new(Arc::clone(&store), agents, config),
            store,
            _dir: dir,
        }
    }

    /// Starts a run of `agent_id` as `principal` and waits until it stops working.
    pub(super) async fn run_until_idle(
        &self,
        agent_id: &str,
        principal: &Principal,
        question_ttl: Option<Duration>,
    ) -> RunRecord {
        self.run_with_tools_until_idle(agent_id, principal, question_ttl, Vec::new())
            .await
    }

    /// [`Harness::run_until_idle`] for a run given client `tools`.
    pub(super) async fn run_with_tools_until_idle(
        &self,
        agent_id: &str,
        principal: &Principal,
        question_ttl: Option<Duration>,
        tools: Vec<ToolDefinition>,
    ) -> RunRecord {
        let (run_id, _) = self
            .runtime
            .start_run(StartRunRequest {
                agent_id: agent_id.to_owned(),
                prompt: "Hi".into(),
                metadata: BTreeMap::new(),
                question_ttl,
                tools,
                request_id: String::new(),
                principal: principal.clone(),
                webhooks: Vec::new(),
            })
            .await
            .expect("a started run");
        self.idle(&run_id, principal).await
    }

    /// Waits until the run stops working, and reads it.
    pub(super) async fn idle(&self, run_id: &str, principal: &Principal) -> RunRecord {
        let events = self.runtime.follow(run_id, principal, 0, FollowUntil::Idle);
        tokio::time::timeout(Duration::from_secs(10), events.for_each(|_| async {}))
            .await
            .expect("the run stops working");
        self.runtime
            .get_run(run_id, principal)
            .await
            .expect("the run")
    }
}

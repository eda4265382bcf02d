//! How much works at once: steps over all runs, steps of one agent's runs, and requests to one
//! model endpoint. Work beyond a limit waits for room (its run stays running, its lease renewed),
//! so a burst of starts or a wave of takeovers cannot pile onto the model or the store at once.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::agents::AgentDefinition;

pub(super) struct Admission {
    steps: Arc<Semaphore>,
    agent_steps: HashMap<String, Arc<Semaphore>>,
    model_requests: HashMap<String, Arc<Semaphore>>,
}

/// Room for one step; given back when dropped.
pub(super) struct StepPermit {
    _step: Option<OwnedSemaphorePermit>,
    _agent_step: Option<OwnedSemaphorePermit>,
}

impl Admission {
    pub(super) fn new<'a>(
        max_running_steps: usize,
        max_model_requests: usize,
        agents: impl Iterator<Item = &'a AgentDefinition>,
    ) -> Self {
        let mut agent_steps = HashMap::new();
        let mut model_requests = HashMap::new();
        for agent in agents {
            if let Some(limit) = agent.max_concurrent_steps {
                agent_steps.insert(agent.id.clone(), Arc::new(Semaphore::new(limit)));
            }
            model_requests
                .entry(agent.model.endpoint().to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(max_model_requests)));
        }
        Self {
            steps: Arc::new(Semaphore::new(max_running_steps)),
            agent_steps,
            model_requests,
        }
    }

    /// Waits for room to work on a step of a run of `agent_id`.
    pub(super) async fn step(&self, agent_id: &str) -> StepPermit {
        // The agent's own limit first: a run waiting for its agent holds no server-wide room.
        let agent_step = match self.agent_steps.get(agent_id) {
            Some(limit) => Arc::clone(limit).acquire_owned().await.ok(),
            None => None,
        };
        StepPermit {
            _step: Arc::clone(&self.steps).acquire_owned().await.ok(),
            _agent_step: agent_step,
        }
    }

    /// Waits for room to send a request to the model endpoint `endpoint`.
    pub(super) async fn model_request(&self, endpoint: &str) -> Option<OwnedSemaphorePermit> {
        match self.model_requests.get(endpoint) {
            Some(limit) => Arc::clone(limit).acquire_owned().await.ok(),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::FutureExt;

    use super::*;
    use crate::runtime::testing::agent;

    const SAYS_DONE: &str = "[[turn]]\nsay = \"Done\"\n";

    fn limited(id: &str, max_concurrent_steps: Option<usize>) -> AgentDefinition {
        AgentDefinition {
            max_concurrent_steps,
            ..agent(id, SAYS_DONE)
        }
    }

    #[tokio::test]
    async fn a_step_past_the_servers_limit_waits_for_room() {
        let agents = [limited("a", None)];
        let admission = Admission::new(2, 8, agents.iter());
        let first = admission.step("a").await;
        let _second = admission.step("a").await;
        let mut third = Box::pin(admission.step("a"));
        assert!((&mut third).now_or_never().is_none(), "no room for a third");
        drop(first);
        tokio::time::timeout(Duration::from_secs(1), third)
            .await
            .expect("room once a step ends");
    }

    #[tokio::test]
    async fn a_step_waiting_for_its_agent_holds_no_server_wide_room() {
        let agents = [limited("slow", Some(1)), limited("other", None)];
        let admission = Admission::new(2, 8, agents.iter());
        let slow = admission.step("slow").await;
        let mut slow_again = Box::pin(admission.step("slow"));
        assert!(
            (&mut slow_again).now_or_never().is_none(),
            "its agent allows one"
        );
        // The server allows two: one is taken, the waiting step holds none.
        let other = admission.step("other").now_or_never();
        assert!(other.is_some(), "another agent's step finds room");
        let mut third = Box::pin(admission.step("other"));
        assert!(
            (&mut third).now_or_never().is_none(),
            "the server's two are taken"
        );
        drop(slow);
        drop(third);
        tokio::time::timeout(Duration::from_secs(1), slow_again)
            .await
            .expect("room once its agent's step ends");
    }

    #[tokio::test]
    async fn model_requests_are_limited_per_endpoint() {
        let agents = [limited("a", None)];
        let endpoint = agents[0].model.endpoint().to_owned();
        let admission = Admission::new(8, 1, agents.iter());
        let first = admission.model_request(&endpoint).await;
        assert!(first.is_some());
        let mut second = Box::pin(admission.model_request(&endpoint));
        assert!(
            (&mut second).now_or_never().is_none(),
            "one request at a time"
        );
        // An endpoint no agent uses is not limited.
        let elsewhere = admission
            .model_request("https://elsewhere.example")
            .now_or_never();
        assert!(matches!(elsewhere, Some(None)));
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(1), second).await;
        assert!(second.expect("room once the first ends").is_some());
    }
}

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

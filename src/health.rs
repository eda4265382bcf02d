//! The health the server reports (grpc.health.v1), for "" and each askuser service alike:
//! SERVING, except while the server drains (from SIGTERM on, for good) or while its store has been
//! unreachable for longer than allowed (until it answers again).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;
use tracing::{info, warn};

use crate::store::RunStore;

/// The fully qualified names of the services, as health checks name them.
const SERVICE_NAMES: [&str; 2] = ["askuser.v1.AgentService", "askuser.v1.ToolService"];

/// The shortest and longest time between two pings of the store.
const MIN_PING_INTERVAL: Duration = Duration::from_millis(100);
const MAX_PING_INTERVAL: Duration = Duration::from_secs(5);

/// What the reported status depends on.
#[derive(Clone, Copy, Default)]
struct Conditions {
    draining: bool,
    store_down: bool,
}

/// The server's health reporter; every change goes through it, so a store coming back never
/// reports SERVING for a server that drains.
pub struct Health {
    reporter: HealthReporter,
    conditions: Mutex<Conditions>,
}

impl Health {
    /// Reports SERVING for every service.
    pub async fn serving(reporter: HealthReporter) -> Arc<Self> {
        let health = Arc::new(Self {
            reporter,
            conditions: Mutex::default(),
        });
        health.update(|_| {}).await;
        health
    }

    /// NOT_SERVING from now on: the server is draining.
    pub async fn drain(&self) {
        self.update(|conditions| conditions.draining = true).await;
    }

    async fn update(&self, change: impl FnOnce(&mut Conditions)) {
        let mut conditions = self.conditions.lock().await;
        change(&mut conditions);
        let status = if conditions.draining || conditions.store_down {
            ServingStatus::NotServing
        } else {
            ServingStatus::Serving
        };
        for name in std::iter::once("").chain(SERVICE_NAMES) {
            self.reporter.set_service_status(name, status).await;
        }
    }

    /// Pings the store for ever: NOT_SERVING once no ping has succeeded for `unhealthy_after`,
    /// SERVING again at the next that does.
    pub async fn watch_store(self: Arc<Self>, store: Arc<dyn RunStore>, unhealthy_after: Duration) {
        let interval = (unhealthy_after / 4).clamp(MIN_PING_INTERVAL, MAX_PING_INTERVAL);
        let mut last_success = Instant::now();
        let mut down = false;
        loop {
            // A ping that hangs (a database that stopped answering) counts as failed.
            let failure = match tokio::time::timeout(interval, store.ping()).await {
                Ok(Ok(())) => None,
                Ok(Err(error)) => Some(error.to_string()),
                Err(_) => Some(format!("no answer within {interval:?}")),
            };
            match failure {
                None => {
                    last_success = Instant::now();
                    if down {
                        down = false;
                        info!("the store is reachable again; health SERVING");
                        self.update(|conditions| conditions.store_down = false)
                            .await;
                    }
                }
                Some(error) if !down && last_success.elapsed() > unhealthy_after => {
                    down = true;
                    warn!(
                        error,
                        ?unhealthy_after,
                        "the store is unreachable; health NOT_SERVING"
                    );
                    self.update(|conditions| conditions.store_down = true).await;
                }
                Some(_) => {}
            }
            tokio::time::sleep(interval).await;
        }
    }
}

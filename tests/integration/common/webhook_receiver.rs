//! A local webhook receiver (axum on a real socket): what it got, with each request's Standard
//! Webhooks headers, optionally failing the first requests.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: String,
    /// When it came, on this process's clock.
    pub at_ms: i64,
}

#[derive(Default)]
struct ReceiverState {
    received: Vec<Received>,
    /// Requests still to answer 500.
    failures_left: usize,
    /// Ids being handled now, and how often an id came while it was.
    in_flight: HashSet<String>,
    overlaps: usize,
}

/// A local webhook receiver.
#[derive(Clone)]
pub struct Receiver {
    state: Arc<Mutex<ReceiverState>>,
    pub url: String,
}

async fn receive(
    State(state): State<Arc<Mutex<ReceiverState>>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let id = header("webhook-id");
    {
        let mut state = state.lock().expect("receiver state");
        if !state.in_flight.insert(id.clone()) {
            state.overlaps += 1;
        }
    }
    // Long enough that a second attempt of the same id by another replica would overlap.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut state = state.lock().expect("receiver state");
    state.in_flight.remove(&id);
    state.received.push(Received {
        id,
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: String::from_utf8_lossy(&body).into_owned(),
        at_ms: super::now_ms(),
    });
    match state.failures_left {
        0 => StatusCode::NO_CONTENT,
        _ => {
            state.failures_left -= 1;
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

impl Receiver {
    /// Serves on `listener`, answering the first `failures` requests with 500.
    pub fn serve(listener: std::net::TcpListener, failures: usize) -> Receiver {
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let state = Arc::new(Mutex::new(ReceiverState {
            failures_left: failures,
            ..Default::default()
        }));
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(Arc::clone(&state));
        listener.set_nonblocking(true).expect("nonblocking");
        let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { state, url }
    }

    pub fn start(failures: usize) -> Receiver {
        Receiver::serve(
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind"),
            failures,
        )
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().expect("state").received.clone()
    }

    pub fn overlaps(&self) -> usize {
        self.state.lock().expect("state").overlaps
    }

    /// Waits (up to a minute) until `done` holds of what came.
    pub async fn wait_for(&self, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        for _ in 0..600 {
            let received = self.received();
            if done(&received) {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("receiver never got {what}: {:#?}", self.received());
    }
}

/// The body of `received` as JSON.
pub fn json(received: &Received) -> serde_json::Value {
    serde_json::from_str(&received.body).expect("JSON body")
}

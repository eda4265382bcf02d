//! Input a server asks for within a live call: `elicitation/create` while its `tools/call` is open
//! (the 2025-11-25 revision and earlier). The request stays open while a person answers; the call
//! it belongs to is the one call in flight on that connection (MCP does not say which call a request
//! belongs to, so with several in flight it cannot be told and is cancelled).

use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::McpServer;

/// One request for input, handed from the connection to the call it belongs to.
pub struct LiveAsk {
    /// The `elicitation/create` params.
    pub params: Value,
    /// The elicitation result (`{"action": ...}`).
    pub reply: oneshot::Sender<Value>,
}

/// Asks a person for a call's live input and waits for the answer.
#[async_trait]
pub trait LiveAsker: Send + Sync {
    /// The elicitation result for `params`: the person's answer, or a decline or cancel.
    async fn ask(&self, params: Value) -> Value;
}

/// A call in flight on a server's connection.
pub(super) struct InFlight {
    id: u64,
    asks: mpsc::Sender<LiveAsk>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Keeps a call listed as in flight until dropped.
pub(super) struct Registered<'a> {
    server: &'a McpServer,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.server
            .in_flight(|calls| calls.retain(|call| call.id != self.id));
    }
}

impl McpServer {
    fn in_flight<T>(&self, f: impl FnOnce(&mut Vec<InFlight>) -> T) -> T {
        match self.in_flight.lock() {
            Ok(mut calls) => f(&mut calls),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Lists a call as in flight; its live input requests come on the returned receiver.
    pub(super) fn register(&self) -> (Registered<'_>, mpsc::Receiver<LiveAsk>) {
        let (asks, receiver) = mpsc::channel(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.in_flight(|calls| calls.push(InFlight { id, asks }));
        (Registered { server: self, id }, receiver)
    }

    /// Where an input request goes: the one call in flight, if there is exactly one.
    pub(super) fn asker_of_request(&self) -> Result<mpsc::Sender<LiveAsk>, usize> {
        self.in_flight(|calls| match calls.as_slice() {
            [call] => Ok(call.asks.clone()),
            calls => Err(calls.len()),
        })
    }
}

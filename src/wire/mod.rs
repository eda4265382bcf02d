//! Domain values as askuser.v1 messages, for every layer that sends them: the API streams a run's
//! events and a webhook's body carries the same ones, so neither has to reach into the other.
//! Decoding requests, and its errors, stays in the API.

mod event;
mod form;

pub use event::{
    event_to_proto, kind_to_proto, payload_into_proto, payload_to_proto, settled_by_to_proto,
    suspend_kind_to_proto, timestamp, usage_to_proto,
};
pub use form::form_to_proto;

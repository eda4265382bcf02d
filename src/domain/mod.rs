//! Plain data shared by every layer: questions, answers, runs and their events.
//!
//! Nothing here talks to the network, the store or a model; the layers convert to and from it.

mod ask_user;
mod form;
mod principal;
mod run;
mod webhook;

pub use ask_user::{
    AnswerInput, ApprovalDecision, AskUserInput, AskUserOption, SelectionMode, SuspendPayload,
};
pub use form::{
    BooleanField, Choice, ChoiceField, ChoiceValue, FieldKind, FieldValue, Form, FormAnswer,
    FormField, FormStyle, Number, NumberField, TextField, TextFormat,
};
pub use principal::{AuthMethod, DEFAULT_TENANT, LinkBinding, Principal, Scope, SettledBy};
pub use run::{
    Event, EventKind, Message, ModelToolCall, PendingCall, RunRecord, RunStatus, SettledCall,
    SuspendKind, Suspension, ToolDefinition, ToolResultKind, Usage, now_millis,
};
pub use webhook::{NewDelivery, WebhookEvent, WebhookPlan, WebhookTarget};

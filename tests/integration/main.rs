//! The integration tests: one test binary, a module per area. Most tests run the server inside
//! this process (`common::Server::start*`); those that need a real process boundary (SIGKILL and
//! restarts, signals and the drain, resource limits, the binary's log and output, process-wide
//! state such as the metrics recorder or the environment) run `askuser serve` as a child
//! (`common::Server::process*`).
//!
//! Run one area with `cargo test --test integration MODULE::`, e.g. `store_suite::`.

mod common;

mod abuse;
mod admission;
mod answer_links;
mod ask_user_rules;
mod assignees;
mod auth;
mod chaos;
mod crash_recovery;
mod dropped_requests;
mod exactly_once;
mod finding_runs;
mod forms;
mod fuzz_agents_file;
mod fuzz_server;
mod grpc_web;
mod http_tools;
mod human;
mod isolation;
mod limits;
mod mcp_elicitation;
mod mcp_endpoint;
mod mcp_tools;
mod mcp_url;
mod metrics;
mod openai_provider;
mod properties;
mod replicas;
mod run_lifecycle;
mod run_protocol;
mod server_log;
mod serving;
mod settled_by;
mod smoke;
mod startup_errors;
mod store_faults;
mod store_suite;
mod terminal;
mod tls;
mod tools;
mod traces;
mod web_inbox;
mod webhooks;

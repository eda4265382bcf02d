//! askuser: a gRPC service that runs AI agents whose `ask_user` tool suspends a run until a person answers.
//!
//! Layers, outermost first: [`api`] (gRPC handlers) → [`runtime`] (agent loop, tools, suspension) →
//! [`model`] (model providers) and [`store`] (SQLite). [`domain`] holds the plain data every layer shares.

pub mod proto {
    //! Code generated from `proto/askuser/v1`.
    pub mod v1 {
        #![allow(clippy::all, missing_docs)]
        tonic::include_proto!("askuser.v1");
    }
    /// Encoded descriptors of every askuser.v1 file, served by reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("askuser_descriptor");
}

pub mod api;
pub mod config;
pub mod domain;
pub mod model;
pub mod runtime;
pub mod server;
pub mod store;

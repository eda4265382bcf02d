//! askuser: a gRPC service that runs AI agents whose `ask_user` tool suspends a run until a person answers.
//!
//! Layers, outermost first: [`api`] (gRPC handlers) → [`runtime`] (agent loop, tools, suspension) →
//! [`model`] (model providers) and [`store`] (SQLite). [`domain`] holds the plain data every layer shares.
//! [`cli`] is the terminal client, a gRPC client of a running server beside those layers.

pub mod proto {
    //! Code generated from `proto/askuser/v1`.
    pub mod v1 {
        #![allow(clippy::all, missing_docs)]
        tonic::include_proto!("askuser.v1");
    }
    /// Encoded descriptors of every askuser.v1 file, served by reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("askuser_descriptor");

    use std::marker::PhantomData;

    use tonic::codec::{BufferSettings, Codec};
    use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

    /// The generated code's codec: prost's, with 1 KiB message buffers instead of 8 KiB. Tonic
    /// allocates one per direction of every call up front, and most askuser messages are far
    /// smaller; a larger message grows its buffer.
    #[derive(Clone, Copy, Debug)]
    pub struct ProtoCodec<T, U>(PhantomData<(T, U)>);

    impl<T, U> Default for ProtoCodec<T, U> {
        fn default() -> Self {
            Self(PhantomData)
        }
    }

    /// 1 KiB buffers; yield to the runtime past 32 KiB of encoded messages, tonic's default.
    fn buffer_settings() -> BufferSettings {
        BufferSettings::new(1024, 32 * 1024)
    }

    impl<T, U> Codec for ProtoCodec<T, U>
    where
        T: prost::Message + Send + 'static,
        U: prost::Message + Default + Send + 'static,
    {
        type Encode = T;
        type Decode = U;
        type Encoder = ProstEncoder<T>;
        type Decoder = ProstDecoder<U>;

        fn encoder(&mut self) -> Self::Encoder {
            ProstCodec::<T, U>::raw_encoder(buffer_settings())
        }

        fn decoder(&mut self) -> Self::Decoder {
            ProstCodec::<T, U>::raw_decoder(buffer_settings())
        }
    }
}

pub mod api;
pub mod auth;
pub mod banner;
pub mod cli;
pub mod config;
pub mod domain;
pub mod health;
pub mod http;
pub mod keys_cli;
pub mod metrics;
pub mod model;
pub mod proto_json;
pub mod redact;
pub mod runtime;
pub mod server;
pub mod store;
pub mod telemetry;
pub mod tls;
pub mod web;
pub mod webhooks;
pub mod wire;

//! The channel to the server and the credentials sent on it, from the flags every subcommand shares.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use super::CliError;
use crate::config::values::positive_duration;
use crate::proto::v1 as pb;
use crate::proto::v1::agent_service_client::AgentServiceClient;

/// Where the server is and how to reach it: flattened into every client subcommand.
#[derive(Clone, Debug, clap::Args)]
pub struct ClientArgs {
    /// The server: host:port, or a URL (`https://...` turns TLS on).
    #[arg(long, env = "ASKUSER_ADDR", default_value = "127.0.0.1:50051")]
    pub addr: String,
    /// An API key (or a JWT), sent as `authorization: Bearer`.
    #[arg(long, env = "ASKUSER_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Connect over TLS, trusting the system's certificate authorities (unless --tls-ca).
    #[arg(long)]
    pub tls: bool,
    /// PEM certificates of the authorities the server's certificate must chain to (implies --tls).
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate for mTLS (implies --tls). Needs --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The name the server's certificate must carry, when it is not the host of --addr.
    #[arg(long)]
    pub tls_server_name: Option<String>,
    /// How long connecting, and each request that is not a stream, may take.
    #[arg(long, default_value = "30s", value_parser = positive_duration)]
    pub timeout: Duration,
    /// Print the proto3 JSON mapping of each frame or item, one object per line.
    #[arg(long)]
    pub json: bool,
}

impl ClientArgs {
    fn wants_tls(&self) -> bool {
        self.tls || self.tls_ca.is_some() || self.tls_cert.is_some()
    }

    /// The server's URL: --addr as given when it has a scheme, else with the one the TLS flags imply.
    fn url(&self) -> Result<String, CliError> {
        match self.addr.split_once("://") {
            Some(("https", _)) => Ok(self.addr.clone()),
            Some(("http", _)) if self.wants_tls() => Err(CliError::Usage(format!(
                "--addr {} is plain http, but TLS flags are given: use https://",
                self.addr
            ))),
            Some(("http", _)) => Ok(self.addr.clone()),
            Some((scheme, _)) => Err(CliError::Usage(format!(
                "--addr {}: the scheme must be http or https, not {scheme}",
                self.addr
            ))),
            None if self.wants_tls() => Ok(format!("https://{}", self.addr)),
            None => Ok(format!("http://{}", self.addr)),
        }
    }

    fn tls_config(&self) -> Result<ClientTlsConfig, CliError> {
        let mut tls = ClientTlsConfig::new();
        tls = match &self.tls_ca {
            Some(path) => tls.ca_certificate(Certificate::from_pem(read(path)?)),
            None => tls.with_native_roots(),
        };
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        if let Some(name) = &self.tls_server_name {
            tls = tls.domain_name(name);
        }
        Ok(tls)
    }

    fn credentials(&self) -> Result<Credentials, CliError> {
        let Some(key) = &self.api_key else {
            return Ok(Credentials(None));
        };
        let value = format!("Bearer {}", key.trim()).parse().map_err(|_| {
            CliError::Usage("--api-key holds characters a header cannot carry".into())
        })?;
        Ok(Credentials(Some(value)))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|source| CliError::ReadFile {
        path: path.display().to_string(),
        source,
    })
}

/// Sends the API key, if any, as `authorization: Bearer` on every request.
#[derive(Clone, Debug)]
pub struct Credentials(Option<MetadataValue<Ascii>>);

impl Interceptor for Credentials {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// The generated client, with credentials.
pub type Client = AgentServiceClient<InterceptedService<Channel, Credentials>>;

/// A connected client, and how long its unary requests may take.
pub struct Connection {
    pub client: Client,
    timeout: Duration,
}

impl Connection {
    /// Connects now, so that an unreachable server is one clear error before anything else.
    pub async fn open(args: &ClientArgs) -> Result<Connection, CliError> {
        let url = args.url()?;
        let mut endpoint = Endpoint::from_shared(url.clone())
            .map_err(|error| CliError::Usage(format!("--addr {}: {error}", args.addr)))?
            .connect_timeout(args.timeout);
        if url.starts_with("https://") {
            endpoint = endpoint
                .tls_config(args.tls_config()?)
                .map_err(|error| connect_error(&args.addr, &error))?;
        }
        let channel = endpoint
            .connect()
            .await
            .map_err(|error| connect_error(&args.addr, &error))?;
        Ok(Connection {
            client: AgentServiceClient::with_interceptor(channel, args.credentials()?)
                .max_decoding_message_size(usize::MAX),
            timeout: args.timeout,
        })
    }

    /// Runs a unary request within --timeout (`timeout` copied out, as the call borrows the client).
    async fn within<T>(
        timeout: Duration,
        call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T, CliError> {
        match tokio::time::timeout(timeout, call).await {
            Ok(response) => Ok(response?.into_inner()),
            Err(_) => Err(CliError::Timeout(timeout)),
        }
    }

    pub async fn get_run(&mut self, run_id: &str) -> Result<pb::Run, CliError> {
        let request = pb::GetRunRequest {
            run_id: run_id.to_owned(),
        };
        let timeout = self.timeout;
        let response = Connection::within(timeout, self.client.get_run(request)).await?;
        response
            .run
            .ok_or_else(|| CliError::Usage(format!("the server returned no run {run_id}")))
    }

    pub async fn list_runs(
        &mut self,
        request: pb::ListRunsRequest,
    ) -> Result<pb::ListRunsResponse, CliError> {
        let timeout = self.timeout;
        Connection::within(timeout, self.client.list_runs(request)).await
    }

    /// The agents the server runs.
    pub async fn list_agents(&mut self) -> Result<Vec<pb::Agent>, CliError> {
        let timeout = self.timeout;
        let response =
            Connection::within(timeout, self.client.list_agents(pb::ListAgentsRequest {})).await?;
        Ok(response.agents)
    }

    /// The calls that wait now: the pending-calls feed's snapshot.
    pub async fn pending_calls(
        &mut self,
        request: pb::WatchPendingCallsRequest,
    ) -> Result<Vec<pb::CallPending>, CliError> {
        use crate::proto::v1::watch_pending_calls_response::Event;
        let timeout = self.timeout;
        let mut feed =
            Connection::within(timeout, self.client.watch_pending_calls(request)).await?;
        let mut calls = Vec::new();
        loop {
            let event = match tokio::time::timeout(timeout, feed.message()).await {
                Ok(event) => event?,
                Err(_) => return Err(CliError::Timeout(timeout)),
            };
            match event.and_then(|event| event.event) {
                None | Some(Event::SnapshotDone(_)) => return Ok(calls),
                Some(Event::CallPending(pending)) => calls.push(pending),
                Some(_) => {}
            }
        }
    }

    pub async fn cancel_run(
        &mut self,
        request: pb::CancelRunRequest,
    ) -> Result<pb::CancelRunResponse, CliError> {
        let timeout = self.timeout;
        Connection::within(timeout, self.client.cancel_run(request)).await
    }
}

/// The error chain of a transport error: its own text is only "transport error".
fn connect_error(addr: &str, error: &dyn std::error::Error) -> CliError {
    let mut reason = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        // Layers often repeat their cause's words.
        let text = cause.to_string();
        if !reason.ends_with(&text) {
            reason.push_str(": ");
            reason.push_str(&text);
        }
        source = cause.source();
    }
    CliError::Connect {
        addr: addr.to_owned(),
        reason,
    }
}

//! What `askuser serve` says once it listens, after its first line (`askuser listening on ADDR`,
//! which scripts read): where the inbox and the MCP endpoint are, the store, who may call, the
//! agents, and one next step. Short, on stdout, for a person who just started it.

use std::fmt::Write as _;
use std::net::SocketAddr;

use crate::config::ServeArgs;

/// The banner's lines, for a server listening on `addr` with these agents.
pub fn banner(args: &ServeArgs, addr: SocketAddr, agent_ids: &[String]) -> String {
    let scheme = match args.tls_cert.is_some() {
        true => "https",
        false => "http",
    };
    // A wildcard address is reached on loopback from this machine.
    let shown = match addr.ip().is_unspecified() {
        true => SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), addr.port()),
        false => addr,
    };
    let base = format!("{scheme}://{shown}");
    let mut text = String::new();
    let mut line = |label: &str, value: String| {
        let _ = writeln!(text, "  {label:<8} {value}");
    };
    if args.ui() {
        line("inbox", format!("{base}/"));
    }
    if args.mcp() {
        line("mcp", format!("{base}/mcp"));
    }
    let store = match args.store.database_url() {
        // Debug leaves the password and the query out.
        Ok(Some(url)) => format!("postgresql {url:?}"),
        _ => format!("sqlite {}", args.store.sqlite_path().display()),
    };
    line("store", store);
    let methods = &args.auth.auth;
    let mut auth: Vec<&str> = Vec::new();
    if methods.keys {
        auth.push("API keys");
    }
    if methods.jwt {
        auth.push("JWTs");
    }
    if methods.cert {
        auth.push("client certificates");
    }
    line(
        "auth",
        match auth.is_empty() {
            true => "none: open to this machine's callers (--auth keys to require a key)".into(),
            false => auth.join(", "),
        },
    );
    line(
        "agents",
        match agent_ids.is_empty() {
            true => "none (--config FILE: docs/agents-and-tools.md)".into(),
            false => agent_ids.join(", "),
        },
    );
    if let Some(metrics) = args.metrics_listen {
        line("metrics", format!("http://{metrics}/metrics"));
    }
    let first = agent_ids
        .iter()
        .find(|id| id.as_str() == "deploy")
        .or(agent_ids.first());
    if let Some(agent) = first {
        let server = match shown.port() {
            50051 if shown.ip().is_loopback() => String::new(),
            _ => format!(" --addr {shown}"),
        };
        line(
            "next",
            format!(
                "askuser start {agent}{server}, then answer in the inbox or with askuser answer"
            ),
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn args(flags: &[&str]) -> ServeArgs {
        let mut argv = vec!["askuser"];
        argv.extend_from_slice(flags);
        Cli::parse_from(argv).serve
    }

    #[test]
    fn says_where_to_go_and_what_to_do_next() {
        let agents = ["deploy".to_owned(), "greeter".to_owned()];
        let text = banner(
            &args(&["--data-dir", "/tmp/askuser-data"]),
            "0.0.0.0:50051".parse().expect("address"),
            &agents,
        );
        assert!(text.contains("inbox    http://127.0.0.1:50051/"), "{text}");
        assert!(
            text.contains("mcp      http://127.0.0.1:50051/mcp"),
            "{text}"
        );
        assert!(
            text.contains("sqlite /tmp/askuser-data/askuser.sqlite3"),
            "{text}"
        );
        assert!(text.contains("auth     none"), "{text}");
        assert!(text.contains("agents   deploy, greeter"), "{text}");
        assert!(text.contains("next     askuser start deploy,"), "{text}");
        assert!(!text.contains("metrics"), "{text}");
    }

    #[test]
    fn names_what_is_off_and_on() {
        let text = banner(
            &args(&[
                "--no-ui",
                "--no-mcp",
                "--auth",
                "keys",
                "--metrics-listen",
                "127.0.0.1:9464",
            ]),
            "127.0.0.1:7000".parse().expect("address"),
            &[],
        );
        assert!(!text.contains("inbox") && !text.contains("mcp "), "{text}");
        assert!(text.contains("auth     API keys"), "{text}");
        assert!(
            text.contains("metrics  http://127.0.0.1:9464/metrics"),
            "{text}"
        );
        assert!(text.contains("agents   none"), "{text}");
    }
}

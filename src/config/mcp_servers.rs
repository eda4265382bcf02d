//! The agents file's `[[mcp_server]]`s: how to reach each MCP server and how its tools are
//! approved, checked when the file is loaded (a server that cannot be reached is not an error
//! here: it is retried while askuser serves).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::runtime::mcp::{McpLimits, McpRevision, McpServerSettings, McpTransport};
use crate::runtime::tools::ApprovalPolicy;

/// An `[[mcp_server]]`: `command` (stdio) or `url` (Streamable HTTP).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct McpServerEntry {
    pub name: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    /// stdio: variables set for the process, on top of a minimal environment.
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    /// HTTP: header name → the environment variable holding its value (never the value).
    #[serde(default)]
    headers_env: BTreeMap<String, String>,
    /// Each request's timeout (the start, a listing, a call), e.g. `30s`.
    #[serde(default)]
    timeout: Option<String>,
    /// How long a call waits for a person when the server elicits input; absent: as long as the
    /// question lives.
    #[serde(default)]
    elicitation_timeout: Option<String>,
    /// `always` (the default), `never`, or a CEL condition over `args` and `run.metadata`.
    #[serde(default)]
    approval: Option<String>,
    /// Per tool (the server's name for it): a policy as `approval`.
    #[serde(default)]
    tool_approval: BTreeMap<String, String>,
    /// The protocol revision to speak (`2025-06-18`, `2025-11-25` or `2026-07-28`); absent: the
    /// newest the server speaks.
    #[serde(default)]
    protocol_version: Option<String>,
    /// Believe the server's `readOnlyHint`: its read-only tools run without approval.
    #[serde(default)]
    trust_annotations: bool,
    /// At most this many of its tools are offered.
    #[serde(default)]
    max_tools: Option<usize>,
    /// At most this many bytes of its tools' descriptions and schemas together are offered.
    #[serde(default)]
    max_listing_bytes: Option<usize>,
}

/// A call's timeout unless the entry says.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

fn duration(field: &str, text: Option<&str>) -> Result<Option<Duration>, String> {
    text.map(|text| match humantime::parse_duration(text) {
        Ok(value) if !value.is_zero() => Ok(value),
        Ok(_) => Err(format!("{field} must be more than 0")),
        Err(e) => Err(format!("{field} \"{text}\": {e}")),
    })
    .transpose()
}

fn policy(field: &str, text: &str) -> Result<ApprovalPolicy, String> {
    ApprovalPolicy::parse(text)
        .map_err(|e| format!("{field} is not never, always or a valid CEL expression: {e}"))
}

impl McpServerEntry {
    /// The settings, with header values read from the environment; the error says what is wrong.
    pub fn settings(self) -> Result<McpServerSettings, String> {
        let valid_name = !self.name.is_empty()
            && self.name.len() <= 32
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !self.name.contains("__");
        if !valid_name {
            return Err(
                "name must be 1 to 32 letters, digits or _ (without __, which separates it from its tools' names)"
                    .into(),
            );
        }
        let transport = match (self.command, self.url) {
            (Some(_), Some(_)) => {
                return Err("give command (stdio) or url (Streamable HTTP), not both".into());
            }
            (None, None) => return Err("needs a command (stdio) or a url (Streamable HTTP)".into()),
            (Some(command), None) => {
                if !self.headers_env.is_empty() {
                    return Err("headers_env is for a url; a command takes env".into());
                }
                if command.is_empty() {
                    return Err("command must not be empty".into());
                }
                McpTransport::Stdio {
                    command,
                    args: self.args,
                    env: self.env,
                }
            }
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() {
                    return Err("args and env are for a command; a url takes headers_env".into());
                }
                let parsed = url::Url::parse(&url).map_err(|e| format!("url: {e}"))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(format!(
                        "url: the scheme must be http or https, not {}",
                        parsed.scheme()
                    ));
                }
                let headers = super::values::headers_from_env(self.headers_env)?;
                McpTransport::Http { url, headers }
            }
        };
        let approval = policy("approval", self.approval.as_deref().unwrap_or("always"))?;
        let tool_approval = self
            .tool_approval
            .into_iter()
            .map(|(tool, text)| {
                Ok((
                    tool.clone(),
                    policy(&format!("tool_approval.{tool}"), &text)?,
                ))
            })
            .collect::<Result<_, String>>()?;
        let mut limits = McpLimits::default();
        match self.max_tools {
            Some(0) => return Err("max_tools must be at least 1".into()),
            Some(max) => limits.max_tools = max,
            None => {}
        }
        match self.max_listing_bytes {
            Some(0) => return Err("max_listing_bytes must be at least 1".into()),
            Some(max) => limits.max_listing_bytes = max,
            None => {}
        }
        Ok(McpServerSettings {
            name: self.name,
            transport,
            timeout: duration("timeout", self.timeout.as_deref())?.unwrap_or(DEFAULT_TIMEOUT),
            elicitation_timeout: duration(
                "elicitation_timeout",
                self.elicitation_timeout.as_deref(),
            )?,
            protocol_version: self
                .protocol_version
                .as_deref()
                .map(|text| {
                    McpRevision::parse(text).ok_or_else(|| {
                        format!("protocol_version \"{text}\": askuser speaks 2025-06-18, 2025-11-25 and 2026-07-28")
                    })
                })
                .transpose()?,
            approval,
            tool_approval,
            trust_annotations: self.trust_annotations,
            limits,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_agents;
    use crate::runtime::AskUserLimits;

    const AGENT: &str = "[[agent]]\nid = \"a\"\n[agent.model]\nprovider = \"scripted\"\n";

    fn error(text: &str) -> String {
        match parse_agents(text, "f", &AskUserLimits::default()) {
            Ok(_) => panic!("accepted: {text}"),
            Err(error) => error.to_string(),
        }
    }

    fn agent_with(fields: &str) -> String {
        format!(
            "[[mcp_server]]\nname = \"files\"\ncommand = \"npx\"\n\n[[agent]]\nid = \"a\"\n{fields}\n[agent.model]\nprovider = \"scripted\"\n"
        )
    }

    #[test]
    fn a_bad_server_stops_loading_naming_it() {
        for (entry, message) in [
            ("name = \"a__b\"\ncommand = \"x\"", "without __"),
            ("name = \"a-b\"\ncommand = \"x\"", "letters, digits or _"),
            ("name = \"s\"", "needs a command"),
            (
                "name = \"s\"\ncommand = \"x\"\nurl = \"http://h/mcp\"",
                "not both",
            ),
            ("name = \"s\"\nurl = \"ftp://h/mcp\"", "http or https"),
            (
                "name = \"s\"\ncommand = \"x\"\nheaders_env = { A = \"B\" }",
                "headers_env is for a url",
            ),
            (
                "name = \"s\"\nurl = \"http://h/mcp\"\nheaders_env = { A = \"ASKUSER_TEST_UNSET_VARIABLE\" }",
                "ASKUSER_TEST_UNSET_VARIABLE (header A) is not set",
            ),
            (
                "name = \"s\"\ncommand = \"x\"\ntimeout = \"0s\"",
                "timeout must be more than 0",
            ),
            (
                "name = \"s\"\ncommand = \"x\"\napproval = \"args.\"",
                "approval is not",
            ),
            (
                "name = \"s\"\ncommand = \"x\"\ntool_approval = { t = \"((\" }",
                "tool_approval.t is not",
            ),
        ] {
            let text = format!("[[mcp_server]]\n{entry}\n\n{AGENT}");
            let error = error(&text);
            assert!(error.contains("mcp_server"), "{error}");
            assert!(error.contains(message), "{entry}: {error}");
        }
    }

    #[test]
    fn agents_name_servers_and_tools_that_exist() {
        for (fields, message) in [
            (
                "mcp_servers = [\"nope\"]",
                "unknown mcp_server \"nope\" (known: files)",
            ),
            ("mcp_servers = [\"files\", \"files\"]", "listed twice"),
            (
                "mcp_servers = [\"files\"]\ntools = [\"files__read\"]",
                "(which offers all its tools)",
            ),
            (
                &format!("tools = [\"files__{}\"]", "x".repeat(60)),
                "an MCP tool's name is its server's",
            ),
            ("tools = [\"other__read\"]", "unknown tool \"other__read\""),
        ] {
            let error = error(&agent_with(fields));
            assert!(error.contains(message), "{fields}: {error}");
        }
    }

    #[test]
    fn an_agent_is_offered_a_whole_server_or_some_of_its_tools() {
        let agents = parse_agents(
            &agent_with("tools = [\"ask_user\", \"files__read_text_file\"]"),
            "f",
            &AskUserLimits::default(),
        )
        .expect("parses");
        let agent = &agents[0];
        assert_eq!(agent.tools.len(), 1);
        assert_eq!(agent.mcp.len(), 1);
        assert_eq!(
            agent.mcp[0].only.as_deref(),
            Some(&["files__read_text_file".to_owned()][..])
        );
        // Before the server is up none of its tools is offered; a call made by name is still
        // run (and fails there) rather than refused as unknown.
        assert_eq!(agent.tools_now().len(), 1);
        assert!(agent.tool_for_call("files__read_text_file").is_some());
        assert!(agent.tool_for_call("files__write_file").is_none());
    }
}

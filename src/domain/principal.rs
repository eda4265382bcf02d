//! Who is calling: the principal every request acts as, once authenticated.

use serde::{Deserialize, Serialize};

/// The tenant of every run when the server runs without authentication (`--auth none`).
pub const DEFAULT_TENANT: &str = "default";

/// What a principal may do; each RPC needs one (see `docs/security.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// Start runs.
    RunsStart,
    /// Ask a person from outside any run (`HumanService.Ask`).
    AsksCreate,
    /// Read runs, follow them, watch the pending-calls feed.
    RunsRead,
    /// Answer questions and decide approvals.
    RunsAnswer,
    /// Cancel runs.
    RunsCancel,
    /// Respond with client tools' outputs, and claim calls.
    ToolsExecute,
    /// List agents.
    AgentsRead,
    /// Everything in its own tenant, agents' instructions included, and managing the tenant's
    /// keys.
    Admin,
    /// Everything `admin` allows, and managing every tenant's keys (creating keys for other
    /// tenants, listing and revoking theirs). Only a key that `askuser keys create --scopes
    /// operator` (or another operator) made holds it; runs stay per tenant even for it.
    Operator,
}

impl Scope {
    pub const ALL: [Scope; 9] = [
        Scope::RunsStart,
        Scope::AsksCreate,
        Scope::RunsRead,
        Scope::RunsAnswer,
        Scope::RunsCancel,
        Scope::ToolsExecute,
        Scope::AgentsRead,
        Scope::Admin,
        Scope::Operator,
    ];

    /// The scope's name, as keys and tokens carry it (`runs:start`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::RunsStart => "runs:start",
            Scope::AsksCreate => "asks:create",
            Scope::RunsRead => "runs:read",
            Scope::RunsAnswer => "runs:answer",
            Scope::RunsCancel => "runs:cancel",
            Scope::ToolsExecute => "tools:execute",
            Scope::AgentsRead => "agents:read",
            Scope::Admin => "admin",
            Scope::Operator => "operator",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == name)
    }
}

/// How a principal proved who it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthMethod {
    /// The server runs without authentication: every caller is the same anonymous principal.
    None,
    ApiKey,
    Jwt,
    /// A client certificate (mTLS).
    Certificate,
    /// The server itself (expiry, cancellation by age, ...).
    Server,
    /// An answer link (a signed link to one call, sent by a webhook).
    AnswerLink,
}

impl AuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ApiKey => "api_key",
            AuthMethod::Jwt => "jwt",
            AuthMethod::Certificate => "certificate",
            AuthMethod::Server => "server",
            AuthMethod::AnswerLink => "answer_link",
        }
    }
}

/// A caller: its tenant, who it is, what it may do and the groups it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub tenant: String,
    pub subject: String,
    pub scopes: Vec<Scope>,
    pub groups: Vec<String>,
    pub method: AuthMethod,
    /// The one call an answer link opens; `None` for every other principal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkBinding>,
}

/// The call an answer link was made for, and for whom: its principal may read that call's run and
/// settle that call while it waits, nothing else (`runtime::settle_access`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkBinding {
    pub run_id: String,
    pub tool_call_id: String,
    /// The assignee it was made for (the call names assignees); `None`: a call anyone may answer.
    pub assignee: Option<String>,
}

impl Principal {
    /// The caller of a server without authentication: the default tenant, every scope.
    pub fn anonymous() -> Principal {
        Principal {
            tenant: DEFAULT_TENANT.to_owned(),
            subject: "anonymous".to_owned(),
            scopes: Scope::ALL.to_vec(),
            groups: Vec::new(),
            method: AuthMethod::None,
            link: None,
        }
    }

    /// The server acting on its own (expiring a question, cancelling a run past its age): it
    /// belongs to no tenant.
    pub fn server() -> Principal {
        Principal {
            tenant: String::new(),
            subject: "askuser".to_owned(),
            scopes: Vec::new(),
            groups: Vec::new(),
            method: AuthMethod::Server,
            link: None,
        }
    }

    /// The holder of an answer link of `tenant` for `binding`'s call: recorded as
    /// `link:<assignee>` (`link` for a call with no assignees); it reads and answers, within its
    /// binding only.
    pub fn answer_link(tenant: String, binding: LinkBinding) -> Principal {
        Principal {
            tenant,
            subject: match &binding.assignee {
                Some(assignee) => format!("link:{assignee}"),
                None => "link".to_owned(),
            },
            scopes: vec![Scope::RunsRead, Scope::RunsAnswer],
            groups: Vec::new(),
            method: AuthMethod::AnswerLink,
            link: Some(binding),
        }
    }

    /// Whether it may do what `scope` allows (`admin` allows everything but `operator`, which
    /// allows everything).
    pub fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
            || self.scopes.contains(&Scope::Operator)
            || (scope != Scope::Operator && self.scopes.contains(&Scope::Admin))
    }
}

/// Who settled a tool call, as its `tool_result` event records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettledBy {
    pub tenant: String,
    pub subject: String,
    pub method: AuthMethod,
}

impl From<&Principal> for SettledBy {
    fn from(principal: &Principal) -> Self {
        SettledBy {
            tenant: principal.tenant.clone(),
            subject: principal.subject.clone(),
            method: principal.method,
        }
    }
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    fn holding(scopes: &[Scope]) -> Principal {
        Principal {
            scopes: scopes.to_vec(),
            ..Principal::anonymous()
        }
    }

    #[test]
    fn admin_allows_all_but_operator_and_operator_allows_all() {
        let admin = holding(&[Scope::Admin]);
        let operator = holding(&[Scope::Operator]);
        for scope in Scope::ALL {
            assert_eq!(admin.may(scope), scope != Scope::Operator, "{scope:?}");
            assert!(operator.may(scope), "{scope:?}");
        }
        assert!(!holding(&[Scope::RunsRead]).may(Scope::RunsAnswer));
        assert_eq!(Scope::parse("operator"), Some(Scope::Operator));
    }
}

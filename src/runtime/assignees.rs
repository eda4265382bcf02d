//! Who may settle a call: a question or an approval may name assignees (subjects, and groups
//! written `group:NAME`), decided when it is asked and stored with it, so that a later change of
//! the agents file does not move a question that already waits.

use super::agents::AgentDefinition;
use super::tools::Tool;
use crate::domain::{AuthMethod, Principal, SuspendKind, Suspension};

/// The prefix of an assignee that names a group.
const GROUP: &str = "group:";

/// The assignees of a call of `tool` by `agent` that waits for `kind`: an approval's are its
/// tool's, or else the agent's; a question's are the agent's; a client tool call (a worker's
/// output) has none.
pub fn of(agent: Option<&AgentDefinition>, tool: Option<&Tool>, kind: SuspendKind) -> Vec<String> {
    let agents = || {
        agent
            .map(|agent| agent.assignees.clone())
            .unwrap_or_default()
    };
    match kind {
        SuspendKind::Approval => match tool {
            Some(tool) if !tool.assignees.is_empty() => tool.assignees.clone(),
            _ => agents(),
        },
        SuspendKind::Question | SuspendKind::Form => agents(),
        SuspendKind::ClientTool => Vec::new(),
    }
}

/// Whether `assignees` name the principal: its subject, or one of its groups.
pub fn name(assignees: &[String], principal: &Principal) -> bool {
    assignees
        .iter()
        .any(|assignee| match assignee.strip_prefix(GROUP) {
            Some(group) => principal.groups.iter().any(|g| g == group),
            None => *assignee == principal.subject,
        })
}

/// Whether the principal may settle a call that waits as `suspension` says. With auth off
/// (`--auth none`) nobody has an identity to check, so assignees are shown but not enforced. An
/// answer link settles as the assignee it was made for, who must still be one (its link says so
/// even with auth off).
pub fn may_settle(suspension: &Suspension, principal: &Principal) -> bool {
    if let Some(link) = &principal.link {
        return suspension.assignees.is_empty()
            || link
                .assignee
                .as_ref()
                .is_some_and(|assignee| suspension.assignees.contains(assignee));
    }
    suspension.assignees.is_empty()
        || principal.method == AuthMethod::None
        || name(&suspension.assignees, principal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Scope;

    fn principal(subject: &str, groups: &[&str]) -> Principal {
        Principal {
            tenant: "acme".into(),
            subject: subject.into(),
            scopes: vec![Scope::RunsAnswer],
            groups: groups.iter().map(|g| g.to_string()).collect(),
            method: AuthMethod::Jwt,
            link: None,
        }
    }

    #[test]
    fn subjects_and_groups_are_matched_exactly() {
        let assignees = vec!["alice".to_owned(), "group:oncall".to_owned()];
        assert!(name(&assignees, &principal("alice", &[])));
        assert!(name(&assignees, &principal("bob", &["oncall"])));
        assert!(!name(&assignees, &principal("bob", &["oncall-eu"])));
        assert!(!name(&assignees, &principal("group:oncall", &[])));
        assert!(!name(&assignees, &principal("Alice", &[])));
    }

    #[test]
    fn only_calls_that_name_assignees_are_restricted() {
        let open = Suspension::default();
        let assigned = Suspension {
            assignees: vec!["alice".into()],
            ..Suspension::default()
        };
        let bob = principal("bob", &[]);
        assert!(may_settle(&open, &bob));
        assert!(!may_settle(&assigned, &bob));
        assert!(may_settle(&assigned, &principal("alice", &[])));
        assert!(may_settle(&assigned, &Principal::anonymous()));
    }
}

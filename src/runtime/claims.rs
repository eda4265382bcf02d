//! Claims: a worker's lease on a pending call, so that workers sharing the pending-calls feed do
//! not run it twice. A claim is its principal's (its subject and the claimant name it sent).

use std::time::Duration;

use super::error::{RejectReason, RuntimeError, short_id};
use super::{Runtime, Violation, millis, settle};
use crate::domain::Principal;
use crate::store::{Claim, ClaimOutcome, Tenancy};

/// The shortest and longest claim `ClaimCall` grants, and the one it grants by default.
const MIN_CLAIM: Duration = Duration::from_secs(1);
const MAX_CLAIM: Duration = Duration::from_secs(3600);
const DEFAULT_CLAIM: Duration = Duration::from_secs(60);

impl Runtime {
    /// Claims a pending call for `claimant` for `ttl` (default 60 s), so that workers sharing the
    /// pending-calls feed do not run it twice; returns when the claim lapses.
    pub async fn claim_call(
        &self,
        run_id: &str,
        principal: &Principal,
        tool_call_id: &str,
        claimant: &str,
        ttl: Option<Duration>,
    ) -> Result<i64, RuntimeError> {
        let mut violations = Vec::new();
        for (field, value) in [
            ("run_id", run_id),
            ("tool_call_id", tool_call_id),
            ("claimant", claimant),
        ] {
            if value.is_empty() {
                violations.push(Violation {
                    field: field.into(),
                    description: format!("{field} must not be empty"),
                });
            }
        }
        let ttl = ttl.unwrap_or(DEFAULT_CLAIM);
        if !(MIN_CLAIM..=MAX_CLAIM).contains(&ttl) {
            violations.push(Violation {
                field: "ttl".into(),
                description: format!(
                    "ttl must be between {} and {}",
                    humantime::format_duration(MIN_CLAIM),
                    humantime::format_duration(MAX_CLAIM)
                ),
            });
        }
        if !violations.is_empty() {
            return Err(RuntimeError::InvalidArgument(violations));
        }
        let until_ms = self.shared.store.now_ms().saturating_add(millis(ttl));
        match self
            .shared
            .store
            .claim_call(Claim {
                run_id,
                tenancy: Tenancy::Only(&principal.tenant),
                tool_call_id,
                claimant,
                // The claim is the principal's: another one reusing the name shown in the feed
                // does not renew it.
                subject: &principal.subject,
                until_ms,
            })
            .await?
        {
            ClaimOutcome::Claimed { until_ms } => Ok(until_ms),
            ClaimOutcome::Held { claimant, until_ms } => Err(RuntimeError::rejected(
                RejectReason::AlreadyClaimed,
                format!(
                    "tool call \"{}\" is claimed by \"{}\" for {} more",
                    short_id(tool_call_id),
                    short_id(&claimant),
                    humantime::format_duration(Duration::from_millis(
                        u64::try_from(until_ms - self.shared.store.now_ms()).unwrap_or(0)
                    ))
                ),
            )),
            ClaimOutcome::NotPending(call) => Err(match settle::not_pending(&call) {
                RuntimeError::AnswerRejected { message, .. } => {
                    RuntimeError::rejected(RejectReason::ToolCallNotPending, message)
                }
                other => other,
            }),
            ClaimOutcome::NotFound => Err(self
                .shared
                .unknown_call(run_id, principal, tool_call_id)
                .await),
        }
    }
}

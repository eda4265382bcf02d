-- askuser schema v16 on SQLite: the pending calls' index holds every column a pending-calls
-- feed's snapshot reads, after the key it is ordered by. A snapshot's page is then one range of
-- the index and nothing else; before, each call in it was looked up again in `tool_calls` (a
-- second B-tree search per call: about a tenth of the server's CPU samples in a profile of the
-- snapshots of 100,000 calls, a fifth less time for them without it). The index holds pending
-- calls only: a call leaves it when it is settled, so what it repeats is bounded by what waits.
-- The payload, the longest column, comes last.
DROP INDEX tool_calls_pending;
CREATE INDEX tool_calls_pending ON tool_calls (
    tenant, run_id, tool_call_id, agent_id, tool_name, suspend_kind, run_arguments,
    approval_reason, expire_ms, claimant, claim_expires_ms, assignees, suspended_ms, payload
) WHERE status = 'pending';

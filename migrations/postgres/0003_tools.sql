-- askuser schema v3: tools that act. A run keeps the client tools given for it; a call keeps what it
-- waits for (question, approval, client tool), the arguments the tool runs with, the approval
-- decision that let it run, and who has claimed it.
ALTER TABLE runs ADD COLUMN run_tools TEXT;
ALTER TABLE tool_calls ADD COLUMN suspend_kind TEXT NOT NULL DEFAULT 'question';
ALTER TABLE tool_calls ADD COLUMN run_arguments TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_calls ADD COLUMN approval_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_calls ADD COLUMN decision TEXT;
ALTER TABLE tool_calls ADD COLUMN claimant TEXT;
ALTER TABLE tool_calls ADD COLUMN claim_expires_ms BIGINT;
-- The idempotency key of a run's start (StartRun.request_id), unique among the runs that have one.
ALTER TABLE runs ADD COLUMN request_id TEXT;
CREATE UNIQUE INDEX runs_by_request ON runs (request_id) WHERE request_id IS NOT NULL;

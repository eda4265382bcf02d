-- askuser schema v6: tenants. Every run belongs to the tenant of the principal that started it;
-- runs made before tenants existed belong to the default tenant, whose principal is the anonymous
-- one of `--auth none`. A start's idempotency key is unique within its tenant only, so one tenant
-- cannot learn of another's run by reusing its key.
ALTER TABLE runs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
DROP INDEX runs_by_request;
CREATE UNIQUE INDEX runs_by_request ON runs (tenant, request_id) WHERE request_id IS NOT NULL;
CREATE INDEX runs_by_tenant ON runs (tenant, run_id);
-- Who may settle a waiting question or approval (a JSON array of subjects and `group:NAME`s),
-- decided when it is asked; NULL: anyone allowed to answer.
ALTER TABLE tool_calls ADD COLUMN assignees TEXT;
-- Who settled a call (JSON: tenant, subject, how it authenticated; NULL when nobody did: an invalid
-- call) and when, for GetRun.
ALTER TABLE tool_calls ADD COLUMN settled_by TEXT;
ALTER TABLE tool_calls ADD COLUMN settled_ms BIGINT;

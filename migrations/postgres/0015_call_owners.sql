-- askuser schema v15: each call carries its run's tenant and agent (set when the call is made; a
-- run's never change), and the pending calls' index leads with the tenant. A new pending-calls
-- feed's snapshot is then one range of that index, its tenant's calls only, with no lookup of each
-- call's run: `runs_owner`, which served that lookup, goes, and with it an index write per run.
ALTER TABLE tool_calls ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_calls ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
UPDATE tool_calls SET
    tenant = COALESCE((SELECT r.tenant FROM runs r WHERE r.run_id = tool_calls.run_id), ''),
    agent_id = COALESCE((SELECT r.agent_id FROM runs r WHERE r.run_id = tool_calls.run_id), '');
DROP INDEX tool_calls_pending;
DROP INDEX runs_owner;
CREATE INDEX tool_calls_pending ON tool_calls (tenant, run_id, tool_call_id) WHERE status = 'pending';

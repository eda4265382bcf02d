-- askuser schema v11: the pending calls alone, in the order the pending-calls feed pages them (by
-- run, then call), so that a new feed's snapshot reads only them, not every call ever stored.
CREATE INDEX tool_calls_pending ON tool_calls (run_id, tool_call_id) WHERE status = 'pending';

-- askuser schema v8: the trace context a run started in (W3C `traceparent` and `tracestate`, as
-- JSON; NULL when the server exported no traces then), so that the run's later steps, on any
-- replica, join its trace; and when each call started waiting (NULL for calls that never did), for
-- GetRun's timings.
ALTER TABLE runs ADD COLUMN trace_context TEXT;
ALTER TABLE tool_calls ADD COLUMN suspended_ms BIGINT;

-- askuser schema v4: how many times the current step of a run was started (by taking its lease to
-- run it), so that a step that never finishes (it crashes the server, or its commit always fails)
-- fails the run after a bounded number of attempts instead of calling the model forever.
ALTER TABLE runs ADD COLUMN step_starts BIGINT NOT NULL DEFAULT 0;

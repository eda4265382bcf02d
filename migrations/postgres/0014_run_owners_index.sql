-- askuser schema v14: each run's tenant and agent by its id, in one index, so that the
-- pending-calls feed's snapshot finds the run of each pending call with one index lookup (no
-- trip to the run's row). Both columns are set when the run is made and never change.
CREATE INDEX runs_owner ON runs (run_id, tenant, agent_id);

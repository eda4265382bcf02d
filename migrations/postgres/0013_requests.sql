-- askuser schema v13: a standalone request (HumanService.Ask) is a run of no agent whose one call
-- is this one: the call's tool name, arguments and suspension as JSON; NULL for an agent's run.
ALTER TABLE runs ADD COLUMN request TEXT;

-- askuser schema v9: the subject of the principal holding a call's claim (NULL while unclaimed, and
-- for claims made before), so that only that principal renews it, whatever claimant name another
-- one sends; its tenant is the run's (only the run's tenant can claim).
ALTER TABLE tool_calls ADD COLUMN claim_subject TEXT;

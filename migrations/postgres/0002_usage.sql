-- askuser schema v2: the tokens each run has used so far (NULL until a provider reports any).
ALTER TABLE runs ADD COLUMN input_tokens BIGINT;
ALTER TABLE runs ADD COLUMN output_tokens BIGINT;

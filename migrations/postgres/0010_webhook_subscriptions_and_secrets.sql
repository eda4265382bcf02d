-- askuser schema v9: per-tenant webhook secrets (below), and a delivery names its run's
-- subscription by index (`runs.webhooks` holds each subscription's URL and signing once per run)
-- instead of copying the URL and the secret's variable into every delivery row. The index is the `<subscription>` part of the `webhook-id`
-- (`<run>:<sequence>:<subscription>`, then `:r<per mille>` for a reminder). The same SQL runs on
-- SQLite (3.35+ for DROP COLUMN) and PostgreSQL.
ALTER TABLE webhook_deliveries ADD COLUMN subscription BIGINT NOT NULL DEFAULT 0;
UPDATE webhook_deliveries SET subscription = CAST(CASE
    WHEN reminder_permille IS NULL
        THEN substr(webhook_id, length(run_id) + length(CAST(sequence AS TEXT)) + 3)
    ELSE substr(webhook_id, length(run_id) + length(CAST(sequence AS TEXT)) + 3,
        length(webhook_id) - length(run_id) - length(CAST(sequence AS TEXT)) - 2
            - length(CAST(reminder_permille AS TEXT)) - 2)
    END AS BIGINT);
ALTER TABLE webhook_deliveries DROP COLUMN url;
ALTER TABLE webhook_deliveries DROP COLUMN secret_env;
-- Each tenant's own secret that signs its runs' own webhooks, sealed (ChaCha20-Poly1305 under the
-- server's key, `--webhook-secrets-key-env`, with the tenant as associated data), and the one it
-- replaced, which still signs beside it until `previous_until_ms`.
CREATE TABLE webhook_secrets (
    tenant TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    previous_secret TEXT,
    previous_until_ms BIGINT
);

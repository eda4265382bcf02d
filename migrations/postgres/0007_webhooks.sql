-- askuser schema v7: webhooks. A run keeps the webhook subscriptions it was started with (JSON:
-- each subscription's URL, events and secret's environment variable, and the reminder fractions;
-- NULL: none), so that every write to it knows, in its own transaction, which deliveries its
-- events make.
ALTER TABLE runs ADD COLUMN webhooks TEXT;
-- The outbox: one row per (event, subscription), or per reminder, written in the transaction that
-- commits the event; a deliverer of any replica claims due rows with a lease and sends them.
CREATE TABLE webhook_deliveries (
    -- The `webhook-id` header: `<run>:<sequence>:<subscription>`, `:r<per mille>` for a reminder.
    webhook_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    -- `call.suspended`, `call.reminder`, `call.settled`, `run.completed`, ...
    event_type TEXT NOT NULL,
    url TEXT NOT NULL,
    -- The environment variable that holds the signing secret (never the secret).
    secret_env TEXT NOT NULL,
    -- A reminder's call, which must still wait when the reminder is due, and its fraction of the
    -- call's TTL in per mille.
    tool_call_id TEXT,
    reminder_permille BIGINT,
    -- pending, delivered, dead (gave up after the maximum age), obsolete (a reminder whose call
    -- no longer waits, or a delivery whose run was deleted).
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    created_ms BIGINT NOT NULL,
    -- When the delivery became pending (created, or redelivered): its maximum age counts from here.
    pending_since_ms BIGINT NOT NULL,
    next_attempt_ms BIGINT NOT NULL,
    last_attempt_ms BIGINT,
    last_error TEXT NOT NULL DEFAULT '',
    -- The replica attempting it, until when.
    lease_owner TEXT,
    lease_expires_ms BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (run_id);
CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (created_ms, webhook_id);

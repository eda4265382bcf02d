-- askuser schema v5: API keys. Only a SHA-256 hash of each key is kept; the key itself is shown
-- once, when it is created. A revoked key keeps its row (revoked_ms set) so listings show it.
CREATE TABLE api_keys (
    key_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    scopes TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    created_ms BIGINT NOT NULL,
    revoked_ms BIGINT
);

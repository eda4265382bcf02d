-- askuser schema v1 on PostgreSQL: the same tables as the SQLite store.
CREATE TABLE runs (
    run_id TEXT COLLATE "C" PRIMARY KEY,
    agent_id TEXT NOT NULL,
    status TEXT NOT NULL,
    prompt TEXT NOT NULL,
    metadata TEXT NOT NULL,
    output_text TEXT NOT NULL DEFAULT '',
    error_message TEXT NOT NULL DEFAULT '',
    last_sequence BIGINT NOT NULL,
    turns BIGINT NOT NULL DEFAULT 0,
    question_ttl_ms BIGINT,
    step_attempt BIGINT NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_expires_ms BIGINT,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL
);
CREATE INDEX runs_by_status ON runs (status, run_id);
CREATE INDEX runs_by_agent ON runs (agent_id, run_id);
CREATE TABLE turns (
    run_id TEXT COLLATE "C" NOT NULL,
    turn BIGINT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (run_id, turn)
);
CREATE TABLE tool_calls (
    run_id TEXT COLLATE "C" NOT NULL,
    tool_call_id TEXT NOT NULL,
    turn BIGINT NOT NULL,
    position BIGINT NOT NULL,
    tool_name TEXT NOT NULL,
    arguments_json TEXT NOT NULL,
    status TEXT NOT NULL,
    payload TEXT,
    expire_ms BIGINT,
    answer TEXT,
    answer_id TEXT NOT NULL DEFAULT '',
    result_content TEXT,
    result_is_error BOOLEAN NOT NULL DEFAULT FALSE,
    result_kind TEXT,
    result_sequence BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX tool_calls_by_expiry ON tool_calls (expire_ms) WHERE status = 'pending' AND expire_ms IS NOT NULL;
CREATE TABLE events (
    run_id TEXT COLLATE "C" NOT NULL,
    sequence BIGINT NOT NULL,
    time_ms BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, sequence)
);

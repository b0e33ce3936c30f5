-- 0001: the job table, per-track progress, the workers, and the webhook outbox (docs/spec.md §4–§6),
-- in their own schema. Times are Unix milliseconds. Append-only: change it with a new migration.

CREATE SCHEMA IF NOT EXISTS jobctl;

CREATE TABLE jobctl.jobs (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('unknown', 'reading', 'completed', 'failed', 'cancelled')),
    input            TEXT NOT NULL,
    output           TEXT NOT NULL,
    preset           TEXT NOT NULL,
    preset_settings  TEXT NOT NULL,
    format           TEXT,
    range_start      DOUBLE PRECISION,
    range_duration   DOUBLE PRECISION,
    priority         INTEGER NOT NULL DEFAULT 0,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    attempt_budget   INTEGER NOT NULL,
    run_at           BIGINT NOT NULL,
    progress         DOUBLE PRECISION NOT NULL DEFAULT 0,
    result           TEXT,
    error_code       TEXT,
    error_message    TEXT,
    error_retryable  BOOLEAN,
    webhook          TEXT,
    metadata         TEXT NOT NULL DEFAULT '{}',
    idempotency_key  TEXT UNIQUE,
    worker           TEXT,
    lease_token      TEXT,
    lease_expires_at BIGINT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    created_at       BIGINT NOT NULL,
    started_at       BIGINT,
    finished_at      BIGINT,
    updated_at       BIGINT NOT NULL
);

CREATE INDEX jobs_queued ON jobctl.jobs (priority DESC, created_at, id) WHERE status = 'unknown';
CREATE INDEX jobs_running ON jobctl.jobs (lease_expires_at) WHERE status = 'reading';
CREATE INDEX jobs_by_status ON jobctl.jobs (status, created_at DESC);

CREATE TABLE jobctl.job_tracks (
    job_id       TEXT NOT NULL REFERENCES jobctl.jobs (id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    source_index INTEGER NOT NULL,
    media_type   TEXT NOT NULL,
    status       TEXT NOT NULL,
    codec        TEXT,
    read         BIGINT NOT NULL DEFAULT 0,
    written      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, idx)
);

CREATE TABLE jobctl.workers (
    name         TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    stopped_at   BIGINT
);

CREATE TABLE jobctl.webhook_deliveries (
    id               TEXT PRIMARY KEY,
    job_id           TEXT NOT NULL REFERENCES jobctl.jobs (id) ON DELETE CASCADE,
    type             TEXT NOT NULL,
    url              TEXT NOT NULL,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'delivering', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  BIGINT,
    lease_token      TEXT,
    lease_expires_at BIGINT,
    dispatcher       TEXT,
    last_status_code INTEGER,
    last_error       TEXT,
    created_at       BIGINT NOT NULL,
    delivered_at     BIGINT,
    updated_at       BIGINT NOT NULL
);

CREATE INDEX webhook_deliveries_due ON jobctl.webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased ON jobctl.webhook_deliveries (lease_expires_at) WHERE status = 'delivering';
CREATE INDEX webhook_deliveries_by_job ON jobctl.webhook_deliveries (job_id, created_at);

CREATE TABLE jobctl.webhook_attempts (
    delivery_id TEXT NOT NULL REFERENCES jobctl.webhook_deliveries (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    at          BIGINT NOT NULL,
    status_code INTEGER,
    latency_ms  INTEGER NOT NULL,
    error       TEXT,
    dispatcher  TEXT NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);

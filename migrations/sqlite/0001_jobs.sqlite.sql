-- 0001: the job table, per-track progress, and the workers (docs/spec.md §4, §5).
-- Times are Unix milliseconds. Append-only: change the schema with a new migration.

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,                      -- UUIDv7: sorts by creation
    kind             TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('unknown', 'reading', 'completed', 'failed', 'cancelled')),
    input            TEXT NOT NULL,
    output           TEXT NOT NULL,
    preset           TEXT NOT NULL,
    preset_settings  TEXT NOT NULL,                         -- JSON: the preset as submitted
    format           TEXT,
    range_start      REAL,                                  -- seconds
    range_duration   REAL,                                  -- seconds; NULL: to the end
    priority         INTEGER NOT NULL DEFAULT 0,
    attempt          INTEGER NOT NULL DEFAULT 0,            -- the attempt running or last run
    max_attempts     INTEGER NOT NULL,                      -- attempts allowed in all (grows with `retry`)
    attempt_budget   INTEGER NOT NULL,                      -- attempts per submission or retry
    run_at           INTEGER NOT NULL,                      -- not claimed before (retry backoff)
    progress         REAL NOT NULL DEFAULT 0,
    result           TEXT,                                  -- JSON
    error_code       TEXT,
    error_message    TEXT,
    error_retryable  INTEGER,
    webhook          TEXT,
    metadata         TEXT NOT NULL DEFAULT '{}',            -- JSON string map
    idempotency_key  TEXT UNIQUE,
    worker           TEXT,
    lease_token      TEXT,                                  -- fencing: changes with every claim
    lease_expires_at INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER,
    updated_at       INTEGER NOT NULL
);

-- Claiming: queued jobs by priority then age; running jobs by lease expiry.
CREATE INDEX jobs_queued ON jobs (priority DESC, created_at, id) WHERE status = 'unknown';
CREATE INDEX jobs_running ON jobs (lease_expires_at) WHERE status = 'reading';
-- Listing: newest first, optionally by status.
CREATE INDEX jobs_by_status ON jobs (status, created_at DESC);

CREATE TABLE job_tracks (
    job_id       TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,                          -- the track's index in the output
    source_index INTEGER NOT NULL,
    media_type   TEXT NOT NULL,
    status       TEXT NOT NULL,
    codec        TEXT,
    read         INTEGER NOT NULL DEFAULT 0,                -- frames, samples or packets
    written      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, idx)
);

CREATE TABLE workers (
    name         TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    stopped_at   INTEGER
);

-- 0002: the webhook outbox (docs/spec.md §6). An event row is inserted in the same transaction as the
-- job's terminal status; dispatchers claim due events with a lease, like jobs.

CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,                      -- the webhook-id header: stable across attempts
    job_id           TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    type             TEXT NOT NULL,                         -- job.completed | job.failed | job.cancelled
    url              TEXT NOT NULL,
    payload          TEXT NOT NULL,                         -- the exact body, serialized once
    status           TEXT NOT NULL CHECK (status IN ('pending', 'delivering', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER,
    lease_token      TEXT,
    lease_expires_at INTEGER,
    dispatcher       TEXT,
    last_status_code INTEGER,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    delivered_at     INTEGER,
    updated_at       INTEGER NOT NULL
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_expires_at) WHERE status = 'delivering';
CREATE INDEX webhook_deliveries_by_job ON webhook_deliveries (job_id, created_at);

CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    status_code INTEGER,
    latency_ms  INTEGER NOT NULL,
    error       TEXT,
    dispatcher  TEXT NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);

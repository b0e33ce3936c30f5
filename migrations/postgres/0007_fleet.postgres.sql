-- 0007: the dashboard's fleet page (docs/dashboard.md): one row per minute, recorded by
-- `jobctl serve` from the jobs that ended in it and the queue as it stood; kept two days.

CREATE TABLE jobctl.job_minutes (
    minute          BIGINT PRIMARY KEY,            -- Unix time in whole minutes
    completed       INTEGER NOT NULL,
    failed          INTEGER NOT NULL,
    cancelled       INTEGER NOT NULL,
    queued          INTEGER NOT NULL,
    running         INTEGER NOT NULL,
    oldest_queued_ms BIGINT,
    wait_p50_ms     BIGINT,
    wait_p95_ms     BIGINT,
    run_p50_ms      BIGINT,
    run_p95_ms      BIGINT
);

-- The jobs that ended in a minute, read by time.
CREATE INDEX jobs_finished ON jobctl.jobs (finished_at) WHERE finished_at IS NOT NULL;

-- Listings newest first with no owner or status to narrow them (an admin's "all", a filter on
-- kind or preset): walked in order, they stop at a page instead of sorting every job.
CREATE INDEX jobs_by_time ON jobctl.jobs (created_at DESC, id DESC);

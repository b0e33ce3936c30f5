-- 0011: each attempt of a job that did not end it well (the dashboard's timeline): when a
-- running job fails, is queued again after a retryable failure, is cancelled, or is taken
-- over by another worker after its lease ran out. A trigger writes it, in the transition's own
-- statement, so every path that moves a job is covered and a completed attempt (the job
-- itself shows it) costs nothing but the trigger's WHEN. Not an attempt: a worker's release
-- (graceful shutdown hands the attempt back, its number too), a split job's fan-out (the same),
-- and a parent waiting for its parts (it holds no lease).
CREATE TABLE job_attempts (
    job_id        TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL,
    worker        TEXT,
    started_at    INTEGER,
    ended_at      INTEGER NOT NULL,
    outcome       TEXT NOT NULL,                            -- failed, cancelled, unknown (queued again), taken over
    error_code    TEXT,
    error_message TEXT
);
CREATE INDEX job_attempts_by_job ON job_attempts (job_id, attempt);

CREATE TRIGGER job_attempt_ended AFTER UPDATE OF status, attempt ON jobs
WHEN old.status = 'reading' AND old.lease_token IS NOT NULL AND new.attempt >= old.attempt
    AND (new.attempt > old.attempt OR new.status NOT IN ('reading', 'completed'))
BEGIN
    INSERT INTO job_attempts (job_id, attempt, worker, started_at, ended_at, outcome, error_code, error_message)
    VALUES (
        old.id, old.attempt, old.worker, old.started_at, new.updated_at,
        CASE WHEN new.attempt <> old.attempt THEN 'taken over' ELSE new.status END,
        CASE WHEN new.attempt <> old.attempt THEN 'lease_lost' ELSE new.error_code END,
        CASE WHEN new.attempt <> old.attempt
            THEN 'its worker ' || coalesce(old.worker, '?') || ' stopped renewing the lease; '
                || coalesce(new.worker, '?') || ' took the job over'
            ELSE new.error_message END
    );
END;

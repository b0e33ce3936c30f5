-- 0009: each attempt of a job that did not end it well (the dashboard's timeline), as SQLite's
-- 0011: written by a trigger when a running job fails, is queued again after a retryable
-- failure, is cancelled, or is taken over after its lease ran out (not a release, a fan-out or
-- a waiting parent). The trigger's WHEN is checked without calling the function, so a claim or
-- a completion pays next to nothing.
CREATE TABLE jobctl.job_attempts (
    job_id        TEXT NOT NULL REFERENCES jobctl.jobs (id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL,
    worker        TEXT,
    started_at    BIGINT,
    ended_at      BIGINT NOT NULL,
    outcome       TEXT NOT NULL,
    error_code    TEXT,
    error_message TEXT
);
CREATE INDEX job_attempts_by_job ON jobctl.job_attempts (job_id, attempt);

CREATE FUNCTION jobctl.record_attempt() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    INSERT INTO jobctl.job_attempts (job_id, attempt, worker, started_at, ended_at, outcome, error_code, error_message)
    VALUES (
        OLD.id, OLD.attempt, OLD.worker, OLD.started_at, NEW.updated_at,
        CASE WHEN NEW.attempt <> OLD.attempt THEN 'taken over' ELSE NEW.status END,
        CASE WHEN NEW.attempt <> OLD.attempt THEN 'lease_lost' ELSE NEW.error_code END,
        CASE WHEN NEW.attempt <> OLD.attempt
            THEN 'its worker ' || coalesce(OLD.worker, '?') || ' stopped renewing the lease; '
                || coalesce(NEW.worker, '?') || ' took the job over'
            ELSE NEW.error_message END
    ); RETURN NULL; END $$;

CREATE TRIGGER job_attempt_ended AFTER UPDATE OF status, attempt ON jobctl.jobs FOR EACH ROW
WHEN (OLD.status = 'reading' AND OLD.lease_token IS NOT NULL AND NEW.attempt >= OLD.attempt
    AND (NEW.attempt > OLD.attempt OR NEW.status NOT IN ('reading', 'completed')))
EXECUTE FUNCTION jobctl.record_attempt();

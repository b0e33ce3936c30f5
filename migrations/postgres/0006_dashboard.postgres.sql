-- 0006: the dashboard on `jobctl serve` (docs/dashboard.md): signed-in sessions, and the audit
-- trail of actions taken from it. Only a SHA-256 of a session's cookie is kept.

CREATE TABLE jobctl.dashboard_sessions (
    id_hash     TEXT PRIMARY KEY,                  -- lowercase hex SHA-256 of the cookie's id
    key_id      TEXT NOT NULL,                     -- the API key signed in with
    csrf_token  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON jobctl.dashboard_sessions (expires_at);

CREATE TABLE jobctl.audit_log (
    seq      BIGSERIAL PRIMARY KEY,
    at       BIGINT NOT NULL,
    key_id   TEXT NOT NULL,
    action   TEXT NOT NULL,
    job_id   TEXT NOT NULL,
    outcome  TEXT NOT NULL
);
CREATE INDEX audit_log_by_job ON jobctl.audit_log (job_id, seq);

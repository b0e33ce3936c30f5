-- 0007: the dashboard on `jobctl serve` (docs/dashboard.md): signed-in sessions, and the audit
-- trail of actions taken from it. Only a SHA-256 of a session's cookie is kept.

CREATE TABLE dashboard_sessions (
    id_hash     TEXT PRIMARY KEY,                  -- lowercase hex SHA-256 of the cookie's id
    key_id      TEXT NOT NULL,                     -- the API key signed in with
    csrf_token  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);

CREATE TABLE audit_log (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    at       INTEGER NOT NULL,
    key_id   TEXT NOT NULL,
    action   TEXT NOT NULL,
    job_id   TEXT NOT NULL,
    outcome  TEXT NOT NULL
);
CREATE INDEX audit_log_by_job ON audit_log (job_id, seq);

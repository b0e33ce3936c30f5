-- 0002: API keys for `jobctl serve` (docs/api.md), and which key submitted each job. Only a
-- SHA-256 of a key's secret is kept; the key itself is printed once, by `jobctl keys create`.

CREATE TABLE jobctl.api_keys (
    id           TEXT PRIMARY KEY,                 -- the public part of the key: jck_ID_SECRET
    name         TEXT NOT NULL,
    scope        TEXT NOT NULL CHECK (scope IN ('read', 'submit', 'admin')),
    secret_hash  TEXT NOT NULL,                    -- lowercase hex SHA-256 of SECRET
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);

-- NULL for jobs submitted by the CLI (only admin keys see those).
ALTER TABLE jobctl.jobs ADD COLUMN owner TEXT;
CREATE INDEX jobs_by_owner ON jobctl.jobs (owner, created_at DESC, id DESC) WHERE owner IS NOT NULL;

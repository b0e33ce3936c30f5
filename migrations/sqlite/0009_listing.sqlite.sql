-- 0009: a tenant's listing by status (the dashboard's default view of a key with a long
-- history, or a rare status): walked newest first within the key's jobs of that status.
CREATE INDEX jobs_by_owner_status ON jobs (owner, status, created_at DESC, id DESC) WHERE owner IS NOT NULL;

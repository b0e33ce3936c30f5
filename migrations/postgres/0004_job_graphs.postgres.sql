-- 0004: job graphs (issue 27; docs/decisions.md #102). A child names its parent and its place
-- among its siblings; a parent counts its children as each ends for good. children_total = 0:
-- not a parent (or not fanned out yet).
ALTER TABLE jobctl.jobs
    ADD COLUMN parent_id TEXT REFERENCES jobctl.jobs(id),
    ADD COLUMN child_index INTEGER,
    ADD COLUMN children_total INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN children_completed INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN children_failed INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN children_cancelled INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_children ON jobctl.jobs (parent_id, child_index) WHERE parent_id IS NOT NULL;

-- 0005: job graphs (issue 27; docs/decisions.md #102). A child names its parent and its place
-- among its siblings; a parent counts its children as each ends for good. children_total = 0:
-- not a parent (or not fanned out yet).
ALTER TABLE jobs ADD COLUMN parent_id TEXT REFERENCES jobs(id);
ALTER TABLE jobs ADD COLUMN child_index INTEGER;
ALTER TABLE jobs ADD COLUMN children_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN children_completed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN children_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN children_cancelled INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_children ON jobs(parent_id, child_index) WHERE parent_id IS NOT NULL;

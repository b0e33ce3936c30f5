-- 0005: resumable uploads (issue 28; docs/decisions.md #115). What a job's attempt has in flight
-- at an object store (a multipart upload's id, as JSON), written under the attempt's lease so
-- that the next attempt, on any worker, continues it; cleared when the upload completes. The
-- sweep aborts the uploads that ended jobs left recorded.
ALTER TABLE jobctl.jobs ADD COLUMN upload_state TEXT;
CREATE INDEX jobs_uploads ON jobctl.jobs (id) WHERE upload_state IS NOT NULL;

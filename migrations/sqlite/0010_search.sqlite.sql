-- 0010: the dashboard's text search (a word of a job's input or output) without reading every
-- row. A trigram index of input and output, contentless (it keeps only which rows have which
-- three-letter runs) and with no positions (detail=none: a quarter of the size); its row id is
-- the job's rowid. `jobctl serve` fills it in batches behind the submissions
-- (SQLiteJobStore.indexSearchText): a submission pays nothing for it. Rows past
-- `indexed_rowid` are searched by reading them; every candidate is checked against the
-- search's LIKE, so an entry that is stale (a job deleted, a rowid reused) finds nothing wrong.
CREATE VIRTUAL TABLE job_search USING fts5(input, output, content='', tokenize='trigram', detail=none, columnsize=0);

-- How far the index goes: the jobs up to `indexed_rowid`, the last of them `indexed_id`. When
-- that job is no longer at that rowid (VACUUM renumbers rowids; the job was deleted), the index
-- is emptied and built again.
CREATE TABLE job_search_state (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_rowid INTEGER NOT NULL,
    indexed_id    TEXT
);
INSERT INTO job_search_state (id, indexed_rowid, indexed_id) VALUES (1, 0, NULL);

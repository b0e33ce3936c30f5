-- 0013: a job's place in a graph is a column of its own (issue 43), no longer a key among its
-- kind's options: {"parent": {"split": …}}, {"parent": {"outputs": […]}}, {"child": {"part": …}},
-- {"child": {}}, or NULL for a job by itself (Sources/Queue/JobRole.swift). Rows written
-- before are moved over: a child's part from its `segment` (a split export's) or `chunk` (a
-- split ladder's) key, a parent's plan from its `split` or `also` key; the keys are removed.
-- Options that are not a JSON object are left as they are (`json_type` is only asked of valid
-- JSON: it fails on anything else).
ALTER TABLE jobs ADD COLUMN role TEXT;

CREATE TEMPORARY VIEW role_keys AS
    SELECT id, parent_id,
        json_type(preset_settings, '$.segment') AS segment,
        json_type(preset_settings, '$.chunk') AS chunk,
        json_type(preset_settings, '$.also') AS also,
        json_type(preset_settings, '$.split') AS split
    FROM jobs WHERE CASE WHEN json_valid(preset_settings) THEN json_type(preset_settings) = 'object' ELSE 0 END;

UPDATE jobs SET role = CASE
        WHEN (SELECT segment FROM role_keys k WHERE k.id = jobs.id) IS NOT NULL
            THEN json_object('child', json_object('part', json_extract(preset_settings, '$.segment')))
        WHEN (SELECT chunk FROM role_keys k WHERE k.id = jobs.id) IS NOT NULL
            THEN json_object('child', json_object('part', json_extract(preset_settings, '$.chunk')))
        ELSE '{"child":{}}'
    END
    WHERE parent_id IS NOT NULL;

UPDATE jobs SET role = json_object('parent', json_object('outputs', json_extract(preset_settings, '$.also')))
    WHERE id IN (SELECT id FROM role_keys WHERE parent_id IS NULL AND also = 'array');

UPDATE jobs SET role = json_object('parent', json_object('split', json_extract(preset_settings, '$.split')))
    WHERE role IS NULL AND id IN (SELECT id FROM role_keys WHERE parent_id IS NULL AND split = 'text');

UPDATE jobs SET preset_settings = json_remove(preset_settings, '$.split', '$.segment', '$.chunk', '$.also')
    WHERE id IN (
        SELECT id FROM role_keys
        WHERE split IS NOT NULL OR segment IS NOT NULL OR chunk IS NOT NULL OR also IS NOT NULL
    );

DROP VIEW role_keys;

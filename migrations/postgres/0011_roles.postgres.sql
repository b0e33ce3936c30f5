-- 0011: a job's place in a graph is a column of its own (issue 43), no longer a key among its
-- kind's options: {"parent": {"split": …}}, {"parent": {"outputs": […]}}, {"child": {"part": …}},
-- {"child": {}}, or NULL for a job by itself (Sources/Queue/JobRole.swift). Rows written
-- before are moved over: a child's part from its `segment` (a split export's) or `chunk` (a
-- split ladder's) key, a parent's plan from its `split` or `also` key; the keys are removed.
ALTER TABLE jobctl.jobs ADD COLUMN role TEXT;

UPDATE jobctl.jobs SET role = CASE
        WHEN preset_settings::jsonb ? 'segment'
            THEN jsonb_build_object('child', jsonb_build_object('part', preset_settings::jsonb -> 'segment'))::text
        WHEN preset_settings::jsonb ? 'chunk'
            THEN jsonb_build_object('child', jsonb_build_object('part', preset_settings::jsonb -> 'chunk'))::text
        ELSE '{"child":{}}'
    END
    WHERE parent_id IS NOT NULL AND jsonb_typeof(preset_settings::jsonb) = 'object';

UPDATE jobctl.jobs SET role = '{"child":{}}' WHERE parent_id IS NOT NULL AND role IS NULL;

UPDATE jobctl.jobs
    SET role = jsonb_build_object('parent', jsonb_build_object('outputs', preset_settings::jsonb -> 'also'))::text
    WHERE parent_id IS NULL AND jsonb_typeof(preset_settings::jsonb) = 'object'
        AND jsonb_typeof(preset_settings::jsonb -> 'also') = 'array';

UPDATE jobctl.jobs
    SET role = jsonb_build_object('parent', jsonb_build_object('split', preset_settings::jsonb -> 'split'))::text
    WHERE parent_id IS NULL AND role IS NULL AND jsonb_typeof(preset_settings::jsonb) = 'object'
        AND jsonb_typeof(preset_settings::jsonb -> 'split') = 'string';

UPDATE jobctl.jobs
    SET preset_settings = (preset_settings::jsonb - 'split' - 'segment' - 'chunk' - 'also')::text
    WHERE jsonb_typeof(preset_settings::jsonb) = 'object'
        AND preset_settings::jsonb ?| ARRAY['split', 'segment', 'chunk', 'also'];

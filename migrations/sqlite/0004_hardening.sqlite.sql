-- 0004: what the second adversarial pass asked for (docs/decisions.md).
-- Attempts in a row that ended with the worker gone (its lease expired): at
-- JobStateMachine.crashLimit the job fails as `worker_crashed` and is set aside (a poison job).
ALTER TABLE jobs ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;
-- The highest priority a key may submit at (admin keys: any).
ALTER TABLE api_keys ADD COLUMN max_priority INTEGER NOT NULL DEFAULT 0;

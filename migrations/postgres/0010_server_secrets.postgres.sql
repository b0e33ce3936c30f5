-- 0010: secrets every `jobctl serve` of one database shares (issue 42): the key that signs the
-- dashboard's sign-in form tokens, so that a form one server gave out is accepted by another.
CREATE TABLE jobctl.server_secrets (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

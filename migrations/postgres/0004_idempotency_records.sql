-- Idempotency-Key records scoped to the credential that used the key: an
-- API key (its id) or no key at all (''), so a key holder's record is never
-- replayed, or reported as used, to a request made without that key (e.g.
-- anonymously through a host of the same tenant), and the other way round.
-- Replaces idempotency_keys (0002), whose primary key cannot take the new
-- column. Records are not carried over: which credential made them is not
-- known, and they matter only to retries (kept 24 h). idempotency_keys stays
-- for replicas still on the release before this one, and goes in a later one.
-- Keep in step with ../sqlite/0004_idempotency_records.sql (same file names in both trees).
CREATE TABLE idempotency_records (
    tenant_id   TEXT   NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    credential  TEXT   NOT NULL,
    key         TEXT   NOT NULL,
    body_digest BYTEA  NOT NULL,
    paste_id    TEXT   NULL,
    expires_at  BIGINT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, credential, key)
);
CREATE INDEX idempotency_records_created_at ON idempotency_records (created_at);

-- The per-tenant paste index: quota accounting, listing a tenant's pastes,
-- burn-after-read claims, expiry sweeps, and Idempotency-Key records.
-- Timestamps are Unix milliseconds (BIGINT); booleans are 0/1.
-- Keep in step with ../postgres/0002_pastes.sql (same file names in both trees).
-- Expand-only: new tables, so replicas still on 0001 keep working.

-- One row per live paste of a tenant. `usage` (0001) stays the quota counter:
-- a row is inserted in the same transaction as the guarded UPDATE that
-- reserves its bytes, and deleted (DELETE ... RETURNING, which decides the
-- one winner of a burn-after-read claim) in the one that releases them.
-- Paste ids order by byte (BINARY, SQLite's default), as in PostgreSQL's "C".
CREATE TABLE pastes (
    tenant_id       TEXT    NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id              TEXT    NOT NULL,
    bytes           BIGINT  NOT NULL CHECK (bytes >= 0),
    created_at      BIGINT  NOT NULL,
    expires_at      BIGINT  NOT NULL,
    burn_after_read BOOLEAN NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
-- The expiry sweep reads the oldest expiries first, across tenants.
CREATE INDEX pastes_expires_at ON pastes (expires_at);

-- Idempotency-Key records of paste creates. `body_digest` is the SHA-256 of
-- the request body; `paste_id` is NULL while the create is in progress and set
-- (with `expires_at`) once it finished. `created_at` is when the create
-- started (or was taken over after a crash); records older than 24 h are swept.
CREATE TABLE idempotency_keys (
    tenant_id   TEXT   NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key         TEXT   NOT NULL,
    body_digest BLOB   NOT NULL,
    paste_id    TEXT   NULL,
    expires_at  BIGINT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

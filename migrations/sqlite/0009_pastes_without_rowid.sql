-- The paste index as a table clustered on its key (WITHOUT ROWID): rows are
-- stored in (tenant_id, id) order, so reading a tenant's rows in id order
-- (planshare-server doctor, beside the store's files in the same order)
-- reads pages one after the other instead of looking each row up by rowid
-- in insertion order — at a million rows, a page read per row. Lookups by
-- key take one B-tree instead of two.
-- Keep in step with ../postgres/0009_pastes_without_rowid.sql (same file names in both trees).
-- Same columns, keys and indexes: a binary still on 0008 reads and writes
-- the rebuilt table as before. The rebuild copies every row once, when a
-- server first opens the catalog after the upgrade.
CREATE TABLE pastes_clustered (
    tenant_id       TEXT    NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id              TEXT    NOT NULL,
    bytes           BIGINT  NOT NULL CHECK (bytes >= 0),
    created_at      BIGINT  NOT NULL,
    expires_at      BIGINT  NOT NULL,
    burn_after_read BOOLEAN NOT NULL,
    PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;
INSERT INTO pastes_clustered (tenant_id, id, bytes, created_at, expires_at, burn_after_read)
    SELECT tenant_id, id, bytes, created_at, expires_at, burn_after_read FROM pastes;
DROP TABLE pastes;
ALTER TABLE pastes_clustered RENAME TO pastes;
CREATE INDEX pastes_expires_at ON pastes (expires_at);
CREATE INDEX pastes_id ON pastes (id);

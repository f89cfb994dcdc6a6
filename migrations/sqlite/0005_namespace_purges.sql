-- Namespaces of deleted tenants whose pastes are still being removed from
-- the paste store. Deleting a tenant writes its row in the same transaction
-- that deletes the tenant; the servers purge the namespace (at once, then
-- again on their upkeep round) and remove the row once a purge has
-- succeeded at least a minute after the deletion, when no create that was
-- under way at the deletion can still land. Until then no new tenant may
-- take the namespace: a namespace never inherits another tenant's pastes.
-- Timestamps are Unix milliseconds.
-- Keep in step with ../postgres/0005_namespace_purges.sql (same file names in both trees).
-- Expand-only: a new table.
CREATE TABLE namespace_purges (
    namespace    TEXT   NOT NULL PRIMARY KEY,
    tenant_id    TEXT   NOT NULL,
    requested_at BIGINT NOT NULL
);

-- Paste index rows by id alone, across tenants: a DELETE with a paste's
-- delete token finds the tenant that holds the id when the request was not
-- resolved to it (a keyed tenant without hosts has no other way in).
-- Keep in step with ../sqlite/0006_pastes_by_id.sql (same file names in both trees).
-- Expand-only: a new index.
CREATE INDEX pastes_id ON pastes (id);

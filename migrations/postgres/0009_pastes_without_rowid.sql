-- On SQLite this rebuilds the paste index clustered on its key (see
-- ../sqlite/0009_pastes_without_rowid.sql). PostgreSQL has no rowid tables:
-- its paste index stays as it is; this file keeps the two trees in step.
-- Keep in step with ../sqlite/0009_pastes_without_rowid.sql (same file names in both trees).
SELECT 1;

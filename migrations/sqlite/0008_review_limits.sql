-- Per-tenant limits of live reviews: live reviewer links per review and
-- versions per review (the defaults: 8 and 100).
-- Keep in step with ../postgres/0008_review_limits.sql (same file names in both trees).
-- Expand-only: new columns with defaults, so replicas still on 0007 keep working.
ALTER TABLE tenants ADD COLUMN review_max_links BIGINT NOT NULL DEFAULT 8;
ALTER TABLE tenants ADD COLUMN review_max_versions BIGINT NOT NULL DEFAULT 100;

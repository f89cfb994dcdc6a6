-- The revision of each comment set: the review's `seq` of the event that
-- stored it. A writer's PUT may name the revision it last read (`base`),
-- and the server refuses it (409 comments-changed) when the set changed
-- since: a stale page never replaces a newer set.
-- Keep in step with ../sqlite/0010_comment_set_seq.sql (same file names in both trees).
-- Expand-only: a replica still on 0009 writes sets without moving `seq`.
-- Sets stored before this migration take their review's current `seq`
-- (at least the seq that stored them, never 0, which means "no set").
ALTER TABLE review_comments ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE review_comments SET seq = (
    SELECT r.seq FROM reviews r
    WHERE r.tenant_id = review_comments.tenant_id AND r.id = review_comments.review_id
);

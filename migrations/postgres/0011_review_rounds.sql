-- The review loop: rounds, approver links and the history of decisions.
-- Keep in step with ../sqlite/0011_review_rounds.sql (same file names in both trees).
-- Expand-only: new columns with defaults and a new table, so replicas
-- still on 0010 keep working (they see an approver link as a reviewer,
-- which cannot decide, and read the current decision from `reviews`).

-- The review's current round: 1 at creation, one more each time a push
-- follows a decision (after `changes_requested`, or an approval that the
-- push voids). Every decision belongs to one round.
ALTER TABLE reviews ADD COLUMN round BIGINT NOT NULL DEFAULT 1;

-- A reviewer link that may also decide (the `approver` role). Kept beside
-- `role` rather than in it: SQLite cannot widen the CHECK on `role`.
ALTER TABLE review_writers ADD COLUMN approver BOOLEAN NOT NULL DEFAULT FALSE;

-- The round each version was pushed in, and whether its pusher claimed it
-- changes only checklist marks of the version before (a progress push:
-- it keeps an approval).
ALTER TABLE review_versions ADD COLUMN round BIGINT NOT NULL DEFAULT 1;
ALTER TABLE review_versions ADD COLUMN progress BOOLEAN NOT NULL DEFAULT FALSE;

-- Every decision, at most one per round: the version (and its digest) it
-- was made on, who made it (writer id, role and name as they were), the
-- feedback blob, and `voided_by`, the version whose push voided an
-- approval. `reviews.state`, `decided_at` and `feedback_*` keep mirroring
-- the current round's decision for replicas on 0010; the feedback blobs of
-- earlier rounds are named here only.
CREATE TABLE review_decisions (
    tenant_id      TEXT   NOT NULL,
    review_id      TEXT   NOT NULL,
    round          BIGINT NOT NULL,
    version        BIGINT NOT NULL,
    digest         TEXT   NOT NULL,
    decision       TEXT   NOT NULL CHECK (decision IN ('approved', 'changes_requested')),
    by_writer      TEXT   NOT NULL,
    by_role        TEXT   NOT NULL CHECK (by_role IN ('owner', 'reviewer', 'approver')),
    by_name        TEXT   NULL,
    feedback_blob  TEXT   NULL,
    feedback_bytes BIGINT NULL CHECK (feedback_bytes >= 0),
    decided_at     BIGINT NOT NULL,
    voided_by      BIGINT NULL,
    PRIMARY KEY (tenant_id, review_id, round),
    FOREIGN KEY (tenant_id, review_id) REFERENCES reviews (tenant_id, id) ON DELETE CASCADE
);

-- Reviews decided before this migration: their decision is round 1's, made
-- by the owner on the latest version.
INSERT INTO review_decisions (tenant_id, review_id, round, version, digest, decision,
    by_writer, by_role, by_name, feedback_blob, feedback_bytes, decided_at)
SELECT r.tenant_id, r.id, 1, v.n, v.digest, r.state, 'owner', 'owner', w.name,
    r.feedback_blob, r.feedback_bytes, COALESCE(r.decided_at, r.created_at)
FROM reviews r
JOIN review_versions v ON v.tenant_id = r.tenant_id AND v.review_id = r.id
    AND v.n = (SELECT MAX(n) FROM review_versions x
               WHERE x.tenant_id = r.tenant_id AND x.review_id = r.id)
LEFT JOIN review_writers w ON w.tenant_id = r.tenant_id AND w.review_id = r.id AND w.id = 'owner'
WHERE r.state <> 'open';

-- Live shared reviews: a review's state and expiry, its versions, its
-- writers (the owner and one row per reviewer link), the metadata of each
-- writer's comment set, and the per-review event log. The catalog never
-- holds a review's content: versions, comment sets and decision feedback
-- are blobs in the paste store, named here by their store id (`*blob`) and
-- counted against the tenant's quota in `usage` (0001) as one entry each,
-- in the same transaction that writes the row naming them.
-- Timestamps are Unix milliseconds (BIGINT); digests are BLOB.
-- Keep in step with ../postgres/0007_reviews.sql (same file names in both trees).
-- Expand-only: new tables, so replicas still on 0006 keep working.

-- One row per review. `state` is 'open' until the owner decides
-- ('approved' or 'changes_requested', with `decided_at` and the optional
-- feedback blob). `seq` is the sequence number of the review's last event:
-- every change bumps it and appends the event, so it also serialises the
-- changes of one review (each change writes this row first).
CREATE TABLE reviews (
    tenant_id      TEXT   NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id             TEXT   NOT NULL,
    state          TEXT   NOT NULL CHECK (state IN ('open', 'approved', 'changes_requested')),
    seq            BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    decided_at     BIGINT NULL,
    feedback_blob  TEXT   NULL,
    feedback_bytes BIGINT NULL CHECK (feedback_bytes >= 0),
    PRIMARY KEY (tenant_id, id)
);
-- The expiry sweep reads the oldest expiries first, across tenants.
CREATE INDEX reviews_expires_at ON reviews (expires_at);

-- The token holders of a review: the owner (`id` 'owner') and each reviewer
-- link (`id` the link id). A token is stored only as its SHA-256
-- (`token_digest`); tokens are 256-bit random, so digests are unique, and
-- the unique index also finds a review's principal across tenants.
-- `name` is bound by the writer's first comment set and never changes;
-- `name_fold` is its lower-case form: of the live writers of a review (not
-- revoked) no two share one, which decides racing claims of a name.
CREATE TABLE review_writers (
    tenant_id    TEXT   NOT NULL,
    review_id    TEXT   NOT NULL,
    id           TEXT   NOT NULL,
    role         TEXT   NOT NULL CHECK (role IN ('owner', 'reviewer')),
    token_digest BLOB   NOT NULL,
    name         TEXT   NULL,
    name_fold    TEXT   NULL,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT NULL,
    PRIMARY KEY (tenant_id, review_id, id),
    FOREIGN KEY (tenant_id, review_id) REFERENCES reviews (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX review_writers_token_digest ON review_writers (token_digest);
CREATE UNIQUE INDEX review_writers_live_name ON review_writers (tenant_id, review_id, name_fold)
    WHERE revoked_at IS NULL AND name_fold IS NOT NULL;

-- The versions of a review, numbered 1, 2, ... in push order. `digest` is
-- the client's digest of the content (opaque here); `blob` and `bytes` name
-- the stored ciphertext.
CREATE TABLE review_versions (
    tenant_id  TEXT   NOT NULL,
    review_id  TEXT   NOT NULL,
    n          BIGINT NOT NULL,
    digest     TEXT   NOT NULL,
    blob       TEXT   NOT NULL,
    bytes      BIGINT NOT NULL CHECK (bytes >= 0),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, review_id, n),
    FOREIGN KEY (tenant_id, review_id) REFERENCES reviews (tenant_id, id) ON DELETE CASCADE
);

-- Each writer's current comment set (one per writer, replaced as a whole),
-- made on version `version`. The name shown with it is the writer's.
CREATE TABLE review_comments (
    tenant_id  TEXT   NOT NULL,
    review_id  TEXT   NOT NULL,
    writer     TEXT   NOT NULL,
    version    BIGINT NOT NULL,
    blob       TEXT   NOT NULL,
    bytes      BIGINT NOT NULL CHECK (bytes >= 0),
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, review_id, writer),
    FOREIGN KEY (tenant_id, review_id) REFERENCES reviews (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, review_id, writer)
        REFERENCES review_writers (tenant_id, review_id, id) ON DELETE CASCADE
);

-- The event log of a review: one row per change, `seq` 1, 2, ... (the
-- review's `seq` after the change). `kind` is the event's wire name and
-- `data` a small JSON object (ids, numbers, names; never content or tokens).
CREATE TABLE review_events (
    tenant_id  TEXT   NOT NULL,
    review_id  TEXT   NOT NULL,
    seq        BIGINT NOT NULL,
    kind       TEXT   NOT NULL,
    data       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, review_id, seq),
    FOREIGN KEY (tenant_id, review_id) REFERENCES reviews (tenant_id, id) ON DELETE CASCADE
);

-- Notifications: per-review subscriptions, the durable outbox of what is
-- still to be delivered (written in the same transaction as the review
-- event it reports), each delivery attempt, and the deployment's own keys.
-- The catalog never holds a notification secret: a webhook's signing secret
-- is derived from the `webhook` key in `notify_keys` and the subscription id.
-- Keep in step with ../postgres/0012_notify.sql (same file names in both trees).
-- Expand-only: new tables and a column with a default, so replicas still on
-- 0011 keep working (they write no outbox rows; the subscriptions wait).

-- A review's deadline and reminders (Unix ms; `remind_every` in ms):
-- while the current round is undecided, `review.reminder` goes to the
-- deciders' subscriptions at `remind_at` (then every `remind_every`) until
-- the deadline, and `review.deadline` to every subscription once the
-- deadline passes (`deadline_sent`). Set and changed by the owner.
ALTER TABLE reviews ADD COLUMN deadline_at BIGINT NULL;
ALTER TABLE reviews ADD COLUMN remind_every BIGINT NULL;
ALTER TABLE reviews ADD COLUMN remind_at BIGINT NULL;
ALTER TABLE reviews ADD COLUMN deadline_sent BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX reviews_remind_at ON reviews (remind_at) WHERE remind_at IS NOT NULL;
CREATE INDEX reviews_deadline_at ON reviews (deadline_at) WHERE deadline_at IS NOT NULL;

-- A tenant may let subscriptions reach private, loopback and link-local
-- addresses and plain http (a LAN, a test suite). Off by default.
ALTER TABLE tenants ADD COLUMN notify_private_targets BOOLEAN NOT NULL DEFAULT FALSE;

-- One row per subscription. `writer` is the link that made it ('owner' or
-- a link id): a writer sees and removes its own, the owner all of them.
-- `target` is the URL (webhook, ntfy); `link_base` the portal origin its
-- notifications link to (`<link_base>/r/<review>`), as the subscriber
-- reached the server. `events` is a bit mask of
-- notification types (1 comment, 2 version, 4 decision, 8 link,
-- 16 reminder, 32 deadline). `disabled_at` is set when the target told us
-- it is gone (a push service's 410). `failures` counts failed attempts in a
-- row; while `retry_at` is in the future the target is left alone (its
-- rows wait until then), so a dead receiver costs one attempt per back-off
-- step, not one per notification.
CREATE TABLE notify_subscriptions (
    tenant_id   TEXT   NOT NULL,
    review_id   TEXT   NOT NULL,
    id          TEXT   NOT NULL,
    writer      TEXT   NOT NULL,
    kind        TEXT   NOT NULL CHECK (kind IN ('webhook', 'ntfy', 'webpush')),
    target      TEXT   NOT NULL,
    link_base   TEXT   NOT NULL,
    events      BIGINT NOT NULL CHECK (events > 0),
    created_at  BIGINT NOT NULL,
    disabled_at BIGINT NULL,
    failures    BIGINT NOT NULL DEFAULT 0,
    retry_at    BIGINT NULL,
    PRIMARY KEY (tenant_id, review_id, id),
    FOREIGN KEY (tenant_id, review_id) REFERENCES reviews (tenant_id, id) ON DELETE CASCADE
);

-- What is to be delivered: one row per (event, subscription). `data` is the
-- notification's `data` object (ids, numbers, names, the writer's sealed
-- preview; never content). `state` is 'pending' until a 2xx ('delivered')
-- or until retries run out or the target is gone ('failed'). A replica
-- claims a due row by setting `claimed_by`/`claimed_until`; a claim that
-- lapsed is anyone's again.
CREATE TABLE notify_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id       TEXT    NOT NULL,
    review_id       TEXT    NOT NULL,
    subscription_id TEXT    NOT NULL,
    seq             BIGINT  NOT NULL,
    type            TEXT    NOT NULL,
    data            TEXT    NOT NULL,
    created_at      BIGINT  NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        BIGINT  NOT NULL DEFAULT 0,
    next_at         BIGINT  NOT NULL,
    claimed_by      TEXT    NULL,
    claimed_until   BIGINT  NULL,
    done_at         BIGINT  NULL,
    FOREIGN KEY (tenant_id, review_id, subscription_id)
        REFERENCES notify_subscriptions (tenant_id, review_id, id) ON DELETE CASCADE
);
-- The deliverer reads the due rows, oldest first.
CREATE INDEX notify_outbox_due ON notify_outbox (next_at) WHERE state = 'pending';
-- A subscription's deliveries, newest first; and the sweep of old ones.
CREATE INDEX notify_outbox_subscription ON notify_outbox (tenant_id, review_id, subscription_id, id);
CREATE INDEX notify_outbox_done ON notify_outbox (done_at) WHERE state <> 'pending';

-- Every attempt: when, the answer's status (NULL when none came), a short
-- reason when it failed, and how long it took.
CREATE TABLE notify_attempts (
    outbox_id  BIGINT NOT NULL REFERENCES notify_outbox (id) ON DELETE CASCADE,
    n          BIGINT NOT NULL,
    at         BIGINT NOT NULL,
    status     BIGINT NULL,
    error      TEXT   NULL,
    ms         BIGINT NOT NULL,
    PRIMARY KEY (outbox_id, n)
);

-- The deployment's notification keys (the webhook secrets' root, the VAPID
-- key pair), made by the first replica to start and read by the others.
CREATE TABLE notify_keys (
    name       TEXT   NOT NULL PRIMARY KEY,
    value      TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);

-- The tenant catalog: tenants, their host names, hashed API keys and usage.
-- Timestamps are Unix milliseconds (BIGINT); booleans are 0/1.
-- Keep in step with ../postgres/0001_catalog.sql (same file names in both trees).

CREATE TABLE tenants (
    id               TEXT    PRIMARY KEY NOT NULL,
    name             TEXT    NOT NULL,
    namespace        TEXT    NOT NULL UNIQUE,
    cors_origins     TEXT    NOT NULL DEFAULT '[]', -- JSON array of origins
    max_paste_size   BIGINT  NOT NULL,
    default_ttl_secs BIGINT  NOT NULL,
    max_ttl_secs     BIGINT  NOT NULL,
    quota_bytes      BIGINT  NOT NULL,
    quota_pastes     BIGINT  NOT NULL,
    rate_per_sec     BIGINT  NOT NULL,
    rate_burst       BIGINT  NOT NULL,
    id_length        BIGINT  NOT NULL,
    allow_anonymous  BOOLEAN NOT NULL,
    status           TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL
);

-- A host name (custom domain or subdomain) maps to at most one tenant.
CREATE TABLE tenant_hosts (
    host      TEXT PRIMARY KEY NOT NULL,
    tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE
);
CREATE INDEX tenant_hosts_tenant_id ON tenant_hosts (tenant_id);

-- API keys are stored as the SHA-256 digest of the full key; `display` is the
-- non-secret prefix shown in listings. The plaintext is never stored.
CREATE TABLE api_keys (
    id           TEXT   PRIMARY KEY NOT NULL,
    tenant_id    TEXT   NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    display      TEXT   NOT NULL,
    digest       BLOB   NOT NULL UNIQUE,
    name         TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    last_used_at BIGINT
);
CREATE INDEX api_keys_tenant_id ON api_keys (tenant_id);

-- Quota accounting: one row per tenant, reserved atomically with a guarded UPDATE.
CREATE TABLE usage (
    tenant_id TEXT   PRIMARY KEY NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    bytes     BIGINT NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    pastes    BIGINT NOT NULL DEFAULT 0 CHECK (pastes >= 0),
    requests  BIGINT NOT NULL DEFAULT 0 CHECK (requests >= 0)
);

-- The default tenant, which anonymous upstream clients use. The server
-- overrides its settings from its configuration at start-up.
INSERT INTO tenants (id, name, namespace, cors_origins, max_paste_size, default_ttl_secs,
                     max_ttl_secs, quota_bytes, quota_pastes, rate_per_sec, rate_burst,
                     id_length, allow_anonymous, status, created_at, updated_at)
VALUES ('tnt_default', 'Default', 'default', '[]', 524288, 604800,
        2592000, 4611686018427387903, 4611686018427387903, 10, 60,
        8, TRUE, 'active', 0, 0);
INSERT INTO usage (tenant_id, bytes, pastes, requests) VALUES ('tnt_default', 0, 0, 0);

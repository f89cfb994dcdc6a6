-- A host name belongs to one tenant, whatever the port: requests are matched
-- by `name:port` and then by `name` alone, so `b.example.com:80` held by one
-- tenant would take requests for another's `b.example.com`. The name is the
-- host up to its `:port`; this index makes it unique across all tenants (a
-- tenant lists each name once: `name` for every port, or `name:port`).
-- Keep in step with ../postgres/0003_host_names.sql (same file names in both trees).
--
-- Entries written before it may share a name. Of those only the first by
-- byte order is kept — the bare `name` when there is one (the tenant that
-- requests without a port already reached), else the lowest `name:port` —
-- and the others are removed, as the rule now refuses them.
DELETE FROM tenant_hosts WHERE EXISTS (
    SELECT 1 FROM tenant_hosts AS other
    WHERE other.host < tenant_hosts.host
      AND (CASE WHEN instr(other.host, ':') > 0
                THEN substr(other.host, 1, instr(other.host, ':') - 1)
                ELSE other.host END)
        = (CASE WHEN instr(tenant_hosts.host, ':') > 0
                THEN substr(tenant_hosts.host, 1, instr(tenant_hosts.host, ':') - 1)
                ELSE tenant_hosts.host END)
);
CREATE UNIQUE INDEX tenant_hosts_name ON tenant_hosts (
    (CASE WHEN instr(host, ':') > 0 THEN substr(host, 1, instr(host, ':') - 1) ELSE host END)
);

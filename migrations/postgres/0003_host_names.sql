-- A host name belongs to one tenant, whatever the port: requests are matched
-- by `name:port` and then by `name` alone, so `b.example.com:80` held by one
-- tenant would take requests for another's `b.example.com`. The name is the
-- host up to its `:port`; this index makes it unique across all tenants (a
-- tenant lists each name once: `name` for every port, or `name:port`).
-- Keep in step with ../sqlite/0003_host_names.sql (same file names in both trees).
--
-- Entries written before it may share a name. Of those only the first by
-- byte order is kept — the bare `name` when there is one (the tenant that
-- requests without a port already reached), else the lowest `name:port` —
-- and the others are removed, as the rule now refuses them.
DELETE FROM tenant_hosts WHERE EXISTS (
    SELECT 1 FROM tenant_hosts AS other
    WHERE other.host COLLATE "C" < tenant_hosts.host COLLATE "C"
      AND split_part(other.host, ':', 1) = split_part(tenant_hosts.host, ':', 1)
);
CREATE UNIQUE INDEX tenant_hosts_name ON tenant_hosts ((split_part(host, ':', 1)));

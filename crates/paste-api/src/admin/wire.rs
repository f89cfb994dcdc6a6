//! The admin API's bodies (`api_types`) to and from the catalog's records
//! (`tenancy`).
//!
//! Plain functions rather than `From` impls: both sides are other crates'
//! types, which this crate may not implement foreign traits between. Each
//! function takes its input apart field by field, so a field added on either
//! side does not compile until it is carried across (or refused) here.

use tenancy::TenantStatus;

/// A create request as the catalog takes it: every setting the request
/// leaves out takes the catalog's default.
pub(super) fn new_tenant(body: api_types::NewTenant) -> tenancy::NewTenant {
    let api_types::NewTenant {
        name,
        namespace,
        settings,
    } = body;
    let api_types::NewTenantSettings {
        hosts,
        cors_origins,
        max_paste_size,
        default_ttl_secs,
        max_ttl_secs,
        quota_bytes,
        quota_pastes,
        rate_per_sec,
        rate_burst,
        id_length,
        allow_anonymous,
        review_max_links,
        review_max_versions,
        notify_private_targets,
    } = settings;
    let d = tenancy::TenantSettings::default();
    tenancy::NewTenant {
        name,
        namespace,
        settings: tenancy::TenantSettings {
            hosts: hosts.unwrap_or(d.hosts),
            cors_origins: cors_origins.unwrap_or(d.cors_origins),
            max_paste_size: max_paste_size.unwrap_or(d.max_paste_size),
            default_ttl_secs: default_ttl_secs.unwrap_or(d.default_ttl_secs),
            max_ttl_secs: max_ttl_secs.unwrap_or(d.max_ttl_secs),
            quota_bytes: quota_bytes.unwrap_or(d.quota_bytes),
            quota_pastes: quota_pastes.unwrap_or(d.quota_pastes),
            rate_per_sec: rate_per_sec.unwrap_or(d.rate_per_sec),
            rate_burst: rate_burst.unwrap_or(d.rate_burst),
            id_length: id_length.unwrap_or(d.id_length),
            allow_anonymous: allow_anonymous.unwrap_or(d.allow_anonymous),
            review_max_links: review_max_links.unwrap_or(d.review_max_links),
            review_max_versions: review_max_versions.unwrap_or(d.review_max_versions),
            notify_private_targets: notify_private_targets.unwrap_or(d.notify_private_targets),
        },
    }
}

/// A change request as the catalog takes it (the same fields, all optional).
pub(super) fn tenant_update(body: api_types::TenantUpdate) -> tenancy::TenantUpdate {
    let api_types::TenantUpdate {
        name,
        hosts,
        cors_origins,
        max_paste_size,
        default_ttl_secs,
        max_ttl_secs,
        quota_bytes,
        quota_pastes,
        rate_per_sec,
        rate_burst,
        id_length,
        allow_anonymous,
        review_max_links,
        review_max_versions,
        notify_private_targets,
    } = body;
    tenancy::TenantUpdate {
        name,
        hosts,
        cors_origins,
        max_paste_size,
        default_ttl_secs,
        max_ttl_secs,
        quota_bytes,
        quota_pastes,
        rate_per_sec,
        rate_burst,
        id_length,
        allow_anonymous,
        review_max_links,
        review_max_versions,
        notify_private_targets,
    }
}

/// A tenant as the API answers it.
pub(super) fn tenant(tenant: tenancy::Tenant) -> api_types::Tenant {
    let tenancy::Tenant {
        id,
        name,
        namespace,
        settings,
        status,
        created_at,
        updated_at,
    } = tenant;
    api_types::Tenant {
        id: id.into(),
        name,
        namespace,
        settings: tenant_settings(settings),
        status: match status {
            TenantStatus::Active => api_types::TenantStatus::Active,
            TenantStatus::Disabled => api_types::TenantStatus::Disabled,
        },
        created_at,
        updated_at,
    }
}

fn tenant_settings(settings: tenancy::TenantSettings) -> api_types::TenantSettings {
    let tenancy::TenantSettings {
        hosts,
        cors_origins,
        max_paste_size,
        default_ttl_secs,
        max_ttl_secs,
        quota_bytes,
        quota_pastes,
        rate_per_sec,
        rate_burst,
        id_length,
        allow_anonymous,
        review_max_links,
        review_max_versions,
        notify_private_targets,
    } = settings;
    api_types::TenantSettings {
        hosts,
        cors_origins,
        max_paste_size,
        default_ttl_secs,
        max_ttl_secs,
        quota_bytes,
        quota_pastes,
        rate_per_sec,
        rate_burst,
        id_length,
        allow_anonymous,
        review_max_links,
        review_max_versions,
        notify_private_targets,
    }
}

/// A key as listed: never its secret (the record has none).
pub(super) fn key_info(key: tenancy::KeyInfo) -> api_types::KeyInfo {
    let tenancy::KeyInfo {
        id,
        tenant_id,
        display,
        name,
        created_at,
        revoked_at,
        last_used_at,
    } = key;
    api_types::KeyInfo {
        id: id.into(),
        tenant_id: tenant_id.into(),
        display,
        name,
        created_at,
        revoked_at,
        last_used_at,
    }
}

/// The answer to a key's creation: its listing and the key itself, the one
/// body that carries a secret.
pub(super) fn created_key(created: tenancy::CreatedKey) -> api_types::CreatedKey {
    let tenancy::CreatedKey { id: _, key, info } = created;
    let api_types::KeyInfo {
        id,
        tenant_id,
        display,
        name,
        created_at,
        revoked_at,
        last_used_at,
    } = key_info(info);
    api_types::CreatedKey {
        id,
        tenant_id,
        display,
        name,
        created_at,
        revoked_at,
        last_used_at,
        key: key.expose_secret().to_owned(),
    }
}

/// A tenant's usage as the API answers it.
pub(super) fn usage(usage: tenancy::Usage) -> api_types::Usage {
    let tenancy::Usage {
        bytes,
        pastes,
        requests,
    } = usage;
    api_types::Usage {
        bytes,
        pastes,
        requests,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_fills_what_it_leaves_out_with_the_catalogs_defaults() {
        let body: api_types::NewTenant = serde_json::from_str(
            r#"{"name":"A","namespace":"a","settings":{"hosts":["a.example.com"],"quota_pastes":5}}"#,
        )
        .unwrap();
        let new = new_tenant(body);
        assert_eq!(
            new.settings,
            tenancy::TenantSettings {
                hosts: vec!["a.example.com".into()],
                quota_pastes: 5,
                ..tenancy::TenantSettings::default()
            }
        );
        let bare: api_types::NewTenant =
            serde_json::from_str(r#"{"name":"A","namespace":"a"}"#).unwrap();
        assert_eq!(
            new_tenant(bare).settings,
            tenancy::TenantSettings::default()
        );
    }

    #[test]
    fn a_tenant_keeps_every_setting_and_its_status() {
        let settings = tenancy::TenantSettings {
            hosts: vec!["h.example".into()],
            cors_origins: vec!["https://o.example".into()],
            max_paste_size: 1,
            default_ttl_secs: 2,
            max_ttl_secs: 3,
            quota_bytes: 4,
            quota_pastes: 5,
            rate_per_sec: 6,
            rate_burst: 7,
            id_length: 9,
            allow_anonymous: true,
            review_max_links: 12,
            review_max_versions: 13,
            notify_private_targets: true,
        };
        let answered = tenant(tenancy::Tenant {
            id: tenancy::TenantId::parse("tnt_abc").unwrap(),
            name: "A".into(),
            namespace: "a".into(),
            settings,
            status: TenantStatus::Disabled,
            created_at: 10,
            updated_at: 11,
        });
        assert_eq!(
            serde_json::to_value(&answered).unwrap(),
            serde_json::json!({
                "id": "tnt_abc", "name": "A", "namespace": "a",
                "settings": {
                    "hosts": ["h.example"], "cors_origins": ["https://o.example"],
                    "max_paste_size": 1, "default_ttl_secs": 2, "max_ttl_secs": 3,
                    "quota_bytes": 4, "quota_pastes": 5, "rate_per_sec": 6,
                    "rate_burst": 7, "id_length": 9, "allow_anonymous": true,
                    "review_max_links": 12, "review_max_versions": 13,
                    "notify_private_targets": true
                },
                "status": "disabled", "created_at": 10, "updated_at": 11
            })
        );
    }

    #[test]
    fn an_update_carries_exactly_the_fields_sent() {
        let body: api_types::TenantUpdate =
            serde_json::from_str(r#"{"name":"B","id_length":12,"hosts":null}"#).unwrap();
        assert_eq!(
            tenant_update(body),
            tenancy::TenantUpdate {
                name: Some("B".into()),
                id_length: Some(12),
                ..tenancy::TenantUpdate::default()
            }
        );
    }
}

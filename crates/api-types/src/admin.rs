//! Bodies of the admin API (`/admin/v1/tenants…`): tenants, their API keys
//! and their usage.
//!
//! Every request body refuses fields it does not know (`deny_unknown_fields`;
//! the server answers 422), so nothing the server controls (an id, the
//! namespace of an existing tenant, the status, timestamps) can be set
//! through one. Response bodies accept unknown fields, so a client keeps
//! working against a server that has added one.
//!
//! The server converts between these and the catalog's records
//! (`paste-api`, `admin/wire.rs`); the rules of their values are in
//! [`crate::rules`]. Where the OpenAPI derive needs a literal (a `pattern`,
//! `minimum`, `maximum`, `max_length` or `max_items`), the literal is checked
//! against [`crate::rules`] by the tests at the end of this file.

use serde::{Deserialize, Deserializer, Serialize};

/// A tenant's settable limits and options. Besides each field's range,
/// `default_ttl_secs` must not exceed `max_ttl_secs` (422 otherwise).
/// When creating a tenant any field may be left out (it takes its
/// default); a tenant as returned always has every field.
//
// In Rust this is the record as returned, every field present; the create
// request's settings are [`NewTenantSettings`]. The document has one schema
// for both (this one), so no field is marked required in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TenantSettings {
    /// Host names (custom domains or subdomains, case-insensitive,
    /// optional `:port`) that resolve to this tenant. A name belongs to
    /// one tenant whatever the port (another tenant's `name` or
    /// `name:port`: 409) and is listed once (`name` covers every port;
    /// `name` and `name:8080` together: 422); `:80` and `:443` are
    /// dropped. Duplicates are dropped.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Host>, required = false, max_items = 100))]
    pub hosts: Vec<String>,
    /// Exact origins (`https://app.example.com`) allowed by CORS.
    /// Duplicates are dropped.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Origin>, required = false, max_items = 100))]
    pub cors_origins: Vec<String>,
    /// Largest accepted paste `data`, in bytes.
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 1, maximum = 4_611_686_018_427_387_903_i64)
    )]
    pub max_paste_size: i64,
    /// TTL of a paste created without one, in seconds (0: pastes expire
    /// at once, as upstream's `PASTE_TTL_DAYS=0`).
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 0, maximum = 3_153_600_000_i64)
    )]
    pub default_ttl_secs: i64,
    /// Longest TTL a client may ask for, in seconds (at most 100 years).
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 0, maximum = 3_153_600_000_i64)
    )]
    pub max_ttl_secs: i64,
    /// Storage quota, in bytes of live pastes (2^62: unlimited).
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 0, maximum = 4_611_686_018_427_387_903_i64)
    )]
    pub quota_bytes: i64,
    /// Quota of live pastes (2^62: unlimited).
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 0, maximum = 4_611_686_018_427_387_903_i64)
    )]
    pub quota_pastes: i64,
    /// Sustained request rate per API key, per second.
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 1, maximum = 1_000_000)
    )]
    pub rate_per_sec: i64,
    /// Burst size of the per-key rate limiter.
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 1, maximum = 1_000_000)
    )]
    pub rate_burst: i64,
    /// Length of issued paste ids.
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 8, maximum = 16)
    )]
    pub id_length: i64,
    /// Whether requests without an API key may create pastes.
    #[cfg_attr(feature = "openapi", schema(required = false))]
    pub allow_anonymous: bool,
    /// Live reviewer links per review (the next is refused with 409).
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 1, maximum = 1000)
    )]
    pub review_max_links: i64,
    /// Versions per review (the next push is refused with 409).
    #[cfg_attr(
        feature = "openapi",
        schema(required = false, minimum = 1, maximum = 10_000)
    )]
    pub review_max_versions: i64,
    /// Whether review notifications may go to private, loopback and
    /// link-local addresses and to plain `http` (a LAN, a test suite).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = false))]
    pub notify_private_targets: bool,
}

/// The settings of a `POST /admin/v1/tenants` request: a field left out
/// takes the catalog's default; `null` is refused like any value of the
/// wrong type. The document describes it as [`TenantSettings`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTenantSettings {
    /// See [`TenantSettings::hosts`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub hosts: Option<Vec<String>>,
    /// See [`TenantSettings::cors_origins`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cors_origins: Option<Vec<String>>,
    /// See [`TenantSettings::max_paste_size`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_paste_size: Option<i64>,
    /// See [`TenantSettings::default_ttl_secs`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub default_ttl_secs: Option<i64>,
    /// See [`TenantSettings::max_ttl_secs`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_ttl_secs: Option<i64>,
    /// See [`TenantSettings::quota_bytes`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub quota_bytes: Option<i64>,
    /// See [`TenantSettings::quota_pastes`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub quota_pastes: Option<i64>,
    /// See [`TenantSettings::rate_per_sec`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub rate_per_sec: Option<i64>,
    /// See [`TenantSettings::rate_burst`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub rate_burst: Option<i64>,
    /// See [`TenantSettings::id_length`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub id_length: Option<i64>,
    /// See [`TenantSettings::allow_anonymous`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_anonymous: Option<bool>,
    /// See [`TenantSettings::review_max_links`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub review_max_links: Option<i64>,
    /// See [`TenantSettings::review_max_versions`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub review_max_versions: Option<i64>,
    /// See [`TenantSettings::notify_private_targets`].
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub notify_private_targets: Option<bool>,
}

impl NewTenantSettings {
    /// Whether no field is set (the request then leaves `settings` out).
    pub fn is_empty(&self) -> bool {
        *self == NewTenantSettings::default()
    }
}

/// A field that may be absent (then `#[serde(default)]` makes it `None`) but,
/// when present, must hold a `T`: `null` is refused, as it is for a field of
/// type `T`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Whether a tenant may be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TenantStatus {
    /// Served normally.
    Active,
    /// Its keys fail and its hosts answer 403; data is kept.
    Disabled,
}

/// `POST /admin/v1/tenants` body. Unknown fields are refused (422).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewTenant {
    /// Human-readable name (1–200 characters, not only white space, no
    /// control characters).
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub name: String,
    /// The paste-store namespace; unique, never changes.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[a-z0-9][a-z0-9_-]{0,62}$"))]
    pub namespace: String,
    /// Limits and options; any omitted field takes its default.
    #[serde(default, skip_serializing_if = "NewTenantSettings::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = TenantSettings))]
    pub settings: NewTenantSettings,
}

/// `PATCH /admin/v1/tenants/{id}` body: an absent or `null` field is
/// left as it is. Unknown fields (id, namespace, status, timestamps) are
/// refused (422).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TenantUpdate {
    /// New name (as `NewTenant.name`).
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Replaces the host list.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Host>>, max_items = 100))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
    /// Replaces the CORS origin list.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Origin>>, max_items = 100))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cors_origins: Option<Vec<String>>,
    /// See `TenantSettings.max_paste_size`.
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 1, maximum = 4_611_686_018_427_387_903_i64)
    )]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_paste_size: Option<i64>,
    /// See `TenantSettings.default_ttl_secs`; the result must not
    /// exceed the tenant's `max_ttl_secs` (422).
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 3_153_600_000_i64))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_ttl_secs: Option<i64>,
    /// See `TenantSettings.max_ttl_secs`; the result must not be below
    /// the tenant's `default_ttl_secs` (422).
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 3_153_600_000_i64))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ttl_secs: Option<i64>,
    /// See `TenantSettings.quota_bytes`.
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 0, maximum = 4_611_686_018_427_387_903_i64)
    )]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota_bytes: Option<i64>,
    /// See `TenantSettings.quota_pastes`.
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 0, maximum = 4_611_686_018_427_387_903_i64)
    )]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota_pastes: Option<i64>,
    /// See `TenantSettings.rate_per_sec`.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1_000_000))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_sec: Option<i64>,
    /// See `TenantSettings.rate_burst`.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1_000_000))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_burst: Option<i64>,
    /// See `TenantSettings.id_length`.
    #[cfg_attr(feature = "openapi", schema(minimum = 8, maximum = 16))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_length: Option<i64>,
    /// See `TenantSettings.allow_anonymous`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_anonymous: Option<bool>,
    /// See `TenantSettings.review_max_links`.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_max_links: Option<i64>,
    /// See `TenantSettings.review_max_versions`.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10_000))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_max_versions: Option<i64>,
    /// See `TenantSettings.notify_private_targets`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notify_private_targets: Option<bool>,
}

/// A tenant as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Tenant {
    /// Its id.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// The paste-store namespace of its pastes.
    pub namespace: String,
    /// Limits and options.
    pub settings: TenantSettings,
    /// Active or disabled.
    pub status: TenantStatus,
    /// Creation time, Unix ms.
    pub created_at: i64,
    /// Last change, Unix ms.
    pub updated_at: i64,
}

/// `GET /admin/v1/tenants`: every tenant, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TenantList {
    /// The tenants.
    pub tenants: Vec<Tenant>,
}

/// `POST /admin/v1/tenants/{id}/keys` request: the new key's name. Unknown
/// fields are refused (422), as on every admin body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateKeyRequest {
    /// Human-readable name (at most 200 characters, no control characters).
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 200, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")
    )]
    pub name: String,
}

/// An API key as listed: never the secret, never its digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeyInfo {
    /// Its id.
    pub id: String,
    /// The tenant it authenticates as.
    pub tenant_id: String,
    /// Non-secret prefix, e.g. `pst_live_AbCd…`.
    pub display: String,
    /// Human-readable name.
    pub name: String,
    /// Creation time, Unix ms.
    pub created_at: i64,
    /// Revocation time, Unix ms, if revoked.
    pub revoked_at: Option<i64>,
    /// Last successful authentication, Unix ms (updated at most once a
    /// minute).
    pub last_used_at: Option<i64>,
}

/// `POST /admin/v1/tenants/{id}/keys` response: the listing fields plus
/// the key itself, shown only here.
//
// `Debug` leaves the key out, so logging this value cannot leak it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedKey {
    /// Its id.
    pub id: String,
    /// The tenant it authenticates as.
    pub tenant_id: String,
    /// Non-secret prefix, e.g. `pst_live_AbCd…`.
    pub display: String,
    /// Human-readable name.
    pub name: String,
    /// Creation time, Unix ms.
    pub created_at: i64,
    /// Always `null` for a new key.
    pub revoked_at: Option<i64>,
    /// Always `null` for a new key.
    pub last_used_at: Option<i64>,
    /// The API key (`pst_live_…`): store it now, it is never shown again.
    pub key: String,
}

impl std::fmt::Debug for CreatedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedKey")
            .field("id", &self.id)
            .field("tenant_id", &self.tenant_id)
            .field("display", &self.display)
            .field("name", &self.name)
            .field("created_at", &self.created_at)
            .field("revoked_at", &self.revoked_at)
            .field("last_used_at", &self.last_used_at)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// `GET /admin/v1/tenants/{id}/keys`: revoked ones included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeyList {
    /// The keys.
    pub keys: Vec<KeyInfo>,
}

/// A tenant's accounted usage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    /// Bytes of indexed live pastes.
    pub bytes: i64,
    /// Indexed live pastes.
    pub pastes: i64,
    /// Paste requests counted (added every 10 s per process).
    pub requests: i64,
}

#[cfg(feature = "openapi")]
pub use schemas::{Host, Origin};

/// The document's schemas of the strings inside [`TenantSettings`]: plain
/// strings on the wire, described from [`crate::rules`] directly.
#[cfg(feature = "openapi")]
mod schemas {
    use std::borrow::Cow;

    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

    use crate::rules;

    /// A host name that resolves to a tenant (the schema only).
    pub struct Host;

    impl utoipa::PartialSchema for Host {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(format!(
                    "A host name that resolves to a tenant: DNS labels of letters, digits\n\
                     and inner hyphens (stored lower case), an optional `:port`, at most\n\
                     {} characters in all.",
                    rules::HOST_MAX_LEN
                )))
                .max_length(Some(rules::HOST_MAX_LEN))
                .pattern(Some(rules::HOST_PATTERN))
                .into()
        }
    }

    impl utoipa::ToSchema for Host {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("Host")
        }
    }

    /// A CORS origin a tenant allows (the schema only).
    pub struct Origin;

    impl utoipa::PartialSchema for Origin {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(
                    "An exact CORS origin, `http(s)://host[:port]` in lower case with no\n\
                     path, or `*` for any origin.",
                ))
                .max_length(Some(rules::ORIGIN_MAX_LEN))
                .pattern(Some(rules::ORIGIN_PATTERN))
                .into()
        }
    }

    impl utoipa::ToSchema for Origin {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("Origin")
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn settings() -> TenantSettings {
        TenantSettings {
            hosts: vec!["team.example.com".into()],
            cors_origins: vec!["https://app.example.com".into()],
            max_paste_size: 524_288,
            default_ttl_secs: 604_800,
            max_ttl_secs: 2_592_000,
            quota_bytes: 10,
            quota_pastes: 20,
            rate_per_sec: 10,
            rate_burst: 60,
            id_length: 8,
            allow_anonymous: false,
            review_max_links: 8,
            review_max_versions: 100,
            notify_private_targets: false,
        }
    }

    #[test]
    fn a_tenant_is_sent_with_every_field_in_the_records_order() {
        let tenant = Tenant {
            id: "tnt_abc".into(),
            name: "Team A".into(),
            namespace: "team-a".into(),
            settings: settings(),
            status: TenantStatus::Active,
            created_at: 1,
            updated_at: 2,
        };
        let text = serde_json::to_string(&tenant).unwrap();
        assert_eq!(
            text,
            r#"{"id":"tnt_abc","name":"Team A","namespace":"team-a","settings":{"hosts":["team.example.com"],"cors_origins":["https://app.example.com"],"max_paste_size":524288,"default_ttl_secs":604800,"max_ttl_secs":2592000,"quota_bytes":10,"quota_pastes":20,"rate_per_sec":10,"rate_burst":60,"id_length":8,"allow_anonymous":false,"review_max_links":8,"review_max_versions":100,"notify_private_targets":false},"status":"active","created_at":1,"updated_at":2}"#
        );
        assert_eq!(serde_json::from_str::<Tenant>(&text).unwrap(), tenant);
        let list = TenantList {
            tenants: vec![tenant],
        };
        let text = serde_json::to_string(&list).unwrap();
        assert_eq!(serde_json::from_str::<TenantList>(&text).unwrap(), list);
        assert_eq!(
            serde_json::to_value(TenantStatus::Disabled).unwrap(),
            "disabled"
        );
    }

    #[test]
    fn answers_accept_fields_a_newer_server_adds() {
        let mut tenant = serde_json::to_value(Tenant {
            id: "tnt_abc".into(),
            name: "A".into(),
            namespace: "a".into(),
            settings: settings(),
            status: TenantStatus::Disabled,
            created_at: 1,
            updated_at: 2,
        })
        .unwrap();
        tenant["region"] = json!("eu");
        assert!(serde_json::from_value::<Tenant>(tenant).is_ok());
        let usage: Usage =
            serde_json::from_str(r#"{"bytes":1,"pastes":2,"requests":3,"egress":4}"#).unwrap();
        assert_eq!((usage.bytes, usage.pastes, usage.requests), (1, 2, 3));
    }

    #[test]
    fn a_new_tenant_sends_only_the_settings_given() {
        let bare = NewTenant {
            name: "A".into(),
            namespace: "a".into(),
            settings: NewTenantSettings::default(),
        };
        let text = serde_json::to_string(&bare).unwrap();
        assert_eq!(text, r#"{"name":"A","namespace":"a"}"#);
        assert_eq!(serde_json::from_str::<NewTenant>(&text).unwrap(), bare);

        let some = NewTenant {
            settings: NewTenantSettings {
                hosts: Some(vec!["a.example.com".into()]),
                quota_bytes: Some(10),
                allow_anonymous: Some(false),
                ..NewTenantSettings::default()
            },
            ..bare
        };
        let text = serde_json::to_string(&some).unwrap();
        assert_eq!(
            text,
            r#"{"name":"A","namespace":"a","settings":{"hosts":["a.example.com"],"quota_bytes":10,"allow_anonymous":false}}"#
        );
        assert_eq!(serde_json::from_str::<NewTenant>(&text).unwrap(), some);
    }

    #[test]
    fn a_new_tenants_settings_refuse_null_and_unknown_fields() {
        for bad in [
            json!({"name": "A", "namespace": "a", "settings": {"max_paste_size": null}}),
            json!({"name": "A", "namespace": "a", "settings": {"hosts": null}}),
            json!({"name": "A", "namespace": "a", "settings": {"status": "active"}}),
            json!({"name": "A", "namespace": "a", "id": "tnt_x"}),
            json!({"name": "A"}),
        ] {
            assert!(
                serde_json::from_value::<NewTenant>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        let unknown = serde_json::from_value::<NewTenant>(
            json!({"name": "A", "namespace": "a", "settings": {"colour": 1}}),
        )
        .unwrap_err();
        assert!(
            unknown.to_string().starts_with("unknown field `colour`"),
            "{unknown}"
        );
    }

    #[test]
    fn an_update_sends_only_its_fields_and_reads_null_as_absent() {
        let update = TenantUpdate {
            name: Some("B".into()),
            quota_bytes: Some(10),
            ..TenantUpdate::default()
        };
        let text = serde_json::to_string(&update).unwrap();
        assert_eq!(text, r#"{"name":"B","quota_bytes":10}"#);
        assert_eq!(serde_json::from_str::<TenantUpdate>(&text).unwrap(), update);
        let nulls: TenantUpdate =
            serde_json::from_str(r#"{"name": null, "hosts": null, "quota_bytes": 10}"#).unwrap();
        assert_eq!(
            nulls,
            TenantUpdate {
                quota_bytes: Some(10),
                ..TenantUpdate::default()
            }
        );
        for bad in [
            r#"{"namespace": "x"}"#,
            r#"{"status": "active"}"#,
            r#"{"id": "tnt_a"}"#,
        ] {
            assert!(serde_json::from_str::<TenantUpdate>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_key_request_refuses_unknown_fields() {
        let request: CreateKeyRequest = serde_json::from_str(r#"{"name":"ci"}"#).unwrap();
        assert_eq!(serde_json::to_string(&request).unwrap(), r#"{"name":"ci"}"#);
        assert!(serde_json::from_str::<CreateKeyRequest>(r#"{"name":"a","role":"x"}"#).is_err());
        assert!(serde_json::from_str::<CreateKeyRequest>("{}").is_err());
    }

    #[test]
    fn keys_are_listed_with_nulls_and_the_created_key_once() {
        let info = KeyInfo {
            id: "key_abc".into(),
            tenant_id: "tnt_abc".into(),
            display: "pst_live_AbCd…".into(),
            name: "ci".into(),
            created_at: 1,
            revoked_at: None,
            last_used_at: Some(3),
        };
        let text = serde_json::to_string(&KeyList {
            keys: vec![info.clone()],
        })
        .unwrap();
        assert_eq!(
            text,
            r#"{"keys":[{"id":"key_abc","tenant_id":"tnt_abc","display":"pst_live_AbCd…","name":"ci","created_at":1,"revoked_at":null,"last_used_at":3}]}"#
        );
        assert_eq!(
            serde_json::from_str::<KeyList>(&text).unwrap().keys,
            vec![info]
        );

        let created = CreatedKey {
            id: "key_abc".into(),
            tenant_id: "tnt_abc".into(),
            display: "pst_live_AbCd…".into(),
            name: "ci".into(),
            created_at: 1,
            revoked_at: None,
            last_used_at: None,
            key: "pst_live_secret".into(),
        };
        let text = serde_json::to_string(&created).unwrap();
        assert_eq!(
            text,
            r#"{"id":"key_abc","tenant_id":"tnt_abc","display":"pst_live_AbCd…","name":"ci","created_at":1,"revoked_at":null,"last_used_at":null,"key":"pst_live_secret"}"#
        );
        assert_eq!(serde_json::from_str::<CreatedKey>(&text).unwrap(), created);
        let debug = format!("{created:?}");
        assert!(
            !debug.contains("secret") && debug.contains("key_abc"),
            "{debug}"
        );
    }
}

/// The literals the OpenAPI derive needs are the rules of [`crate::rules`].
#[cfg(test)]
#[cfg(feature = "openapi")]
mod schema_tests {
    use std::collections::BTreeMap;
    use std::ops::RangeInclusive;

    use serde_json::{Map, Value, json};
    use utoipa::PartialSchema;

    use super::*;
    use crate::rules;

    /// The validation keywords a schema states.
    const KEYWORDS: [&str; 6] = [
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "maxItems",
    ];

    /// Each property of `T`'s schema (or `""` for a schema without
    /// properties) with the validation keywords it states.
    fn stated<T: PartialSchema>() -> BTreeMap<String, Value> {
        let schema = serde_json::to_value(T::schema()).unwrap();
        let keywords = |s: &Value| {
            let found: Map<String, Value> = KEYWORDS
                .iter()
                .filter_map(|k| s.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                .collect();
            Value::Object(found)
        };
        match schema["properties"].as_object() {
            Some(properties) => properties
                .iter()
                .map(|(name, s)| (name.clone(), keywords(s)))
                .collect(),
            None => BTreeMap::from([(String::new(), keywords(&schema))]),
        }
    }

    fn range<N: serde::Serialize>(r: &RangeInclusive<N>) -> Value {
        json!({"minimum": r.start(), "maximum": r.end()})
    }

    fn expect(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    /// The settings' fields, as a record and as an update.
    fn settings_rules() -> Vec<(&'static str, Value)> {
        vec![
            ("hosts", json!({"maxItems": rules::MAX_HOSTS})),
            ("cors_origins", json!({"maxItems": rules::MAX_CORS_ORIGINS})),
            ("max_paste_size", range(&rules::MAX_PASTE_SIZE)),
            ("default_ttl_secs", range(&rules::TTL_SECS)),
            ("max_ttl_secs", range(&rules::TTL_SECS)),
            ("quota_bytes", range(&rules::QUOTA)),
            ("quota_pastes", range(&rules::QUOTA)),
            ("rate_per_sec", range(&rules::RATE)),
            ("rate_burst", range(&rules::RATE)),
            ("id_length", range(&rules::ID_LENGTH)),
            ("allow_anonymous", json!({})),
            ("notify_private_targets", json!({})),
            ("review_max_links", range(&rules::REVIEW_LINKS)),
            ("review_max_versions", range(&rules::REVIEW_VERSIONS)),
        ]
    }

    fn tenant_name() -> Value {
        json!({"maxLength": rules::NAME_MAX_CHARS, "pattern": rules::TENANT_NAME_PATTERN})
    }

    #[test]
    fn the_review_bodies_state_the_review_rules() {
        use crate::reviews::{PushVersionRequest, PutCommentsRequest, VersionInput};
        assert_eq!(
            stated::<PutCommentsRequest>()["name"],
            json!({"minLength": 1, "maxLength": rules::REVIEW_NAME_MAX_CHARS, "pattern": rules::TENANT_NAME_PATTERN})
        );
        for digest in [
            stated::<VersionInput>()["digest"].clone(),
            stated::<PushVersionRequest>()["digest"].clone(),
        ] {
            assert_eq!(digest, json!({"pattern": rules::REVIEW_DIGEST_PATTERN}));
        }
    }

    #[test]
    fn every_stated_limit_is_a_rule() {
        let mut update = settings_rules();
        update.push(("name", tenant_name()));
        assert_eq!(stated::<TenantSettings>(), expect(&settings_rules()));
        assert_eq!(stated::<TenantUpdate>(), expect(&update));
        assert_eq!(
            stated::<NewTenant>(),
            expect(&[
                ("name", tenant_name()),
                ("namespace", json!({"pattern": rules::NAMESPACE_PATTERN})),
                ("settings", json!({})),
            ])
        );
        assert_eq!(
            stated::<CreateKeyRequest>(),
            expect(&[(
                "name",
                json!({"maxLength": rules::NAME_MAX_CHARS, "pattern": rules::KEY_NAME_PATTERN})
            )])
        );
        assert_eq!(
            stated::<crate::CreatePasteRequest>(),
            expect(&[
                ("data", json!({"minLength": 1})),
                ("ttl", range(&rules::PASTE_TTL_SECS)),
                ("burnAfterRead", json!({})),
            ])
        );
        assert_eq!(
            stated::<Host>(),
            expect(&[(
                "",
                json!({"maxLength": rules::HOST_MAX_LEN, "pattern": rules::HOST_PATTERN})
            )])
        );
        assert_eq!(
            stated::<Origin>(),
            expect(&[(
                "",
                json!({"maxLength": rules::ORIGIN_MAX_LEN, "pattern": rules::ORIGIN_PATTERN})
            )])
        );
    }

    /// The answers state no limits (they describe what the server sends).
    #[test]
    fn answers_state_no_limits() {
        let none = |stated: BTreeMap<String, Value>| stated.values().all(|v| v == &json!({}));
        assert!(none(stated::<Tenant>()));
        assert!(none(stated::<TenantList>()));
        assert!(none(stated::<KeyInfo>()));
        assert!(none(stated::<KeyList>()));
        assert!(none(stated::<CreatedKey>()));
        assert!(none(stated::<Usage>()));
    }
}

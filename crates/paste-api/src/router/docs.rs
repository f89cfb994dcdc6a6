//! The OpenAPI document, put together from the route tables of this module
//! and the shared parts of [`crate::openapi`], and the routes that serve it:
//! `GET /api/openapi.json`, and `GET /api/docs/`, a Swagger UI page built
//! into the binary (no network needed) with its own
//! Content-Security-Policy (the API's `default-src 'none'; sandbox` would
//! stop its scripts). The committed copy is `openapi/openapi.json`
//! (`planshare-server openapi`).

use std::sync::OnceLock;

use axum::Router;
use http::{HeaderValue, header};
use tower_http::set_header::SetResponseHeaderLayer;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::{Config, SwaggerUi};

use crate::error::ApiError;
use crate::openapi::{ADMIN_TOKEN, API_KEY, ApiDoc, DELETE_TOKEN, REVIEW_TOKEN};
use crate::routing::{Auth, RouteRow, Shedding, row, with_method_fallback};
use crate::state::AppState;
use crate::{admin, pastes, reviews, system};

/// Where the document is served.
const DOCUMENT_PATH: &str = "/api/openapi.json";
/// Where the API reference page is served.
const DOCS_PATH: &str = "/api/docs";

/// The policy of the reference page: only this origin's scripts, styles
/// (Swagger UI sets inline styles), images (and its `data:` icons) and
/// requests ("Try it out"); never framed, no forms, no base.
const DOCS_CSP: HeaderValue = HeaderValue::from_static(
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'",
);

/// The OpenAPI document of every route: the paste API, the probes, the
/// document itself and the admin API (even where the admin API is served on
/// its own listener, or is off).
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.merge(pastes::routes::routes().into_openapi());
    doc.merge(reviews::routes::routes().into_openapi());
    doc.merge(system::routes::discovery_routes().into_openapi());
    doc.merge(system::routes::probe_routes().into_openapi());
    doc.merge(document_api().into_openapi());
    let mut doc = doc.nest("/admin", admin::routes::routes().into_openapi());
    add_common_answers(&mut doc);
    headers_are_never_null(&mut doc);
    add_paste_links(&mut doc);
    doc
}

/// The error answers every operation of a family can give, stated once
/// here instead of on each operation: the family is told by the security
/// schemes an operation accepts.
const ADMIN_ANSWERS: [(&str, &str); 5] = [
    ("401", "Unauthorized"),
    ("403", "Forbidden"),
    ("429", "TooManyRequests"),
    ("500", "Internal"),
    ("503", "Unavailable"),
];
/// Every paste operation (API key or delete token, or anonymous beside them).
const PASTE_ANSWERS: [(&str, &str); 4] = [
    ("401", "Unauthorized"),
    ("403", "Forbidden"),
    ("429", "TooManyRequests"),
    ("503", "Unavailable"),
];

/// Every review operation (owner or reviewer token).
const REVIEW_ANSWERS: [(&str, &str); 5] = [
    ("401", "Unauthorized"),
    ("404", "NotFound"),
    ("429", "TooManyRequests"),
    ("500", "Internal"),
    ("503", "Unavailable"),
];

/// A header is sent or not; it has no `null`. utoipa types an optional
/// header as `[T, "null"]`, which would invite clients (and generated
/// tests) to send the text `null`: the type is narrowed to `T`.
fn headers_are_never_null(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::schema::{Schema, SchemaType, Type};
    use utoipa::openapi::{RefOr, path::ParameterIn};

    for item in doc.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
            &mut item.head,
        ];
        for operation in operations.into_iter().flatten() {
            for parameter in operation.parameters.iter_mut().flatten() {
                let RefOr::T(parameter) = parameter else {
                    continue;
                };
                if parameter.parameter_in != ParameterIn::Header {
                    continue;
                }
                if let Some(RefOr::T(Schema::Object(object))) = parameter.schema.as_mut()
                    && let SchemaType::Array(types) = &object.schema_type
                {
                    let kept: Vec<Type> = types
                        .iter()
                        .filter(|t| **t != Type::Null)
                        .cloned()
                        .collect();
                    if let [only] = kept.as_slice() {
                        object.schema_type = SchemaType::Type(only.clone());
                    }
                }
            }
        }
    }
}

/// Adds [`ADMIN_ANSWERS`] to the operations that take the admin token and
/// [`PASTE_ANSWERS`] to those that take an API key or a delete token; an
/// answer an operation states itself is kept.
fn add_common_answers(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{Ref, RefOr};

    for item in doc.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
            &mut item.head,
        ];
        for operation in operations.into_iter().flatten() {
            let schemes: Vec<String> = operation
                .security
                .iter()
                .flatten()
                .filter_map(|requirement| serde_json::to_value(requirement).ok())
                .filter_map(|value| {
                    value
                        .as_object()
                        .map(|o| o.keys().cloned().collect::<Vec<_>>())
                })
                .flatten()
                .collect();
            let takes = |scheme: &str| schemes.iter().any(|s| s == scheme);
            let answers: &[(&str, &str)] = if takes(ADMIN_TOKEN) {
                &ADMIN_ANSWERS
            } else if takes(REVIEW_TOKEN) {
                &REVIEW_ANSWERS
            } else if takes(API_KEY) || takes(DELETE_TOKEN) {
                &PASTE_ANSWERS
            } else {
                continue;
            };
            for (status, name) in answers {
                operation
                    .responses
                    .responses
                    .entry((*status).to_owned())
                    .or_insert_with(|| RefOr::Ref(Ref::from_response_name(*name)));
            }
        }
    }
}

/// OpenAPI links from each create to the read and delete of the same route
/// family: the `id` in a 201 body addresses the new paste. (Both families
/// reach the same pastes; the links name the natural next calls.)
fn add_paste_links(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::link::LinkBuilder;

    let families = [
        ("/api/paste", ["getPasteCompat", "deletePasteCompat"]),
        ("/api/v1/pastes", ["getPaste", "deletePaste"]),
    ];
    for (path, targets) in families {
        let Some(RefOr::T(created)) = doc
            .paths
            .paths
            .get_mut(path)
            .and_then(|item| item.post.as_mut())
            .and_then(|op| op.responses.responses.get_mut("201"))
        else {
            continue;
        };
        for target in targets {
            let link = LinkBuilder::new()
                .operation_id(target)
                .parameter("id", "$response.body#/id")
                .description("The paste just created")
                .build();
            created.links.insert(target.to_owned(), RefOr::T(link));
        }
    }
}

/// [`openapi`] as pretty JSON with a trailing newline: the bytes of the
/// committed `openapi/openapi.json` and of `GET /api/openapi.json`.
pub fn openapi_json() -> String {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| match serde_json::to_string_pretty(&openapi()) {
        Ok(mut text) => {
            text.push('\n');
            text
        }
        // utoipa's types always serialise; if not, say so in the document.
        Err(error) => format!("{{\"error\": \"cannot serialise the document: {error}\"}}\n"),
    })
    .clone()
}

/// `GET /api/openapi.json` and the reference page, without layers (the
/// shared layers wrap them like every route; no rate limit applies).
pub(crate) fn docs_routes() -> Router<AppState> {
    let (document, _) = document_api().split_for_parts();
    let page: Router<AppState> = SwaggerUi::new(DOCS_PATH)
        .config(
            Config::new([DOCUMENT_PATH])
                // Swagger UI's default asks a remote validator for a badge.
                .validator_url("none")
                .try_it_out_enabled(false),
        )
        .into();
    let page = page
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed { allow: "GET, HEAD" } })
        .layer(SetResponseHeaderLayer::overriding(
            header::CONTENT_SECURITY_POLICY,
            DOCS_CSP,
        ));
    document.merge(page)
}

/// The document's own row (the reference page below `/api/docs/` is not
/// a documented route, and takes a place like any other request).
pub(crate) const ROWS: &[RouteRow] = &[row("GET", DOCUMENT_PATH, Shedding::Applies, Auth::Anyone)];

fn document_api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(with_method_fallback(
        routes!(document::openapi),
        "GET, HEAD",
    ))
}

/// The handler, in a module of its own: named after its operationId, like
/// every handler, which is also the name of the document's builder.
mod document {
    use axum::response::{IntoResponse as _, Response};
    use http::{StatusCode, header};

    use crate::response::JSON_CONTENT_TYPE;
    use crate::router::docs::openapi_json;

    /// The OpenAPI document of this API (this document).
    #[utoipa::path(
        get,
        path = "/api/openapi.json",
        tag = "docs",
        operation_id = "openapi",
        responses(
            (status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = Object),
        ),
    )]
    pub(crate) async fn openapi() -> Response {
        let mut response = (StatusCode::OK, openapi_json()).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, JSON_CONTENT_TYPE);
        response
    }
}

#[cfg(test)]
mod tests {
    use api_types::rules;

    use super::*;

    /// Whether `value` is valid under the document's string schema at
    /// `pointer` (its `pattern` and `maxLength`, counted in characters).
    fn schema_accepts(doc: &serde_json::Value, pointer: &str, value: &str) -> bool {
        let schema = doc
            .pointer(pointer)
            .unwrap_or_else(|| panic!("no {pointer}"));
        let pattern = schema["pattern"]
            .as_str()
            .unwrap_or_else(|| panic!("{pointer}: no pattern"));
        let re = regex::Regex::new(pattern).unwrap();
        let max = schema["maxLength"]
            .as_u64()
            .map_or(usize::MAX, |m| m as usize);
        re.is_match(value) && value.chars().count() <= max
    }

    /// A corpus of strings near the edges of every documented string rule.
    fn corpus() -> Vec<String> {
        let mut v: Vec<String> = [
            "",
            " ",
            "a",
            "A",
            "é",
            "-",
            "_",
            "*",
            "a b",
            " a",
            "a ",
            "\t",
            "\u{85}",
            "\u{a0}",
            "\u{3000}x",
            "x\u{7f}",
            "x\u{9f}",
            "x\u{a0}",
            "x\u{1f}",
            "\u{2028}",
            "team-a",
            "team_a",
            "-a",
            "0a",
            "a.com",
            "A.Com",
            "a..b",
            "a-.b",
            "a.-b",
            "a.com:1",
            "a.com:0",
            "a.com:080",
            "a.com:+80",
            "a.com:65535",
            "a.com:65536",
            "a.com:",
            ":80",
            "a.com/x",
            "https://a.com",
            "http://a.com:8080",
            "https://A.com",
            "https://a.com/",
            "ftp://a.com",
            "https://",
            "https://a.com:0443",
            "tnt_default",
            "tnt_",
            "tnt_a-b",
            "key_abc",
            "key_",
            "名前",
            "🚀",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for n in [62, 63, 64, 199, 200, 201, 252, 253, 254, 260, 261, 262] {
            v.push("a".repeat(n));
            v.push(format!("https://{}", "a".repeat(n.saturating_sub(8))));
            v.push("é".repeat(n));
        }
        for n in [31, 32, 33] {
            v.push(format!("tnt_{}", "a".repeat(n)));
            v.push(format!("key_{}", "a".repeat(n)));
        }
        let labels = |n: usize, len: usize| vec!["a".repeat(len); n].join(".");
        for (n, len) in [(4, 62), (4, 63), (3, 63)] {
            v.push(labels(n, len));
            v.push(format!("{}:8080", labels(n, len)));
            v.push(format!("https://{}", labels(n, len)));
        }
        v
    }

    /// The documented string rules accept exactly what the catalog accepts,
    /// so generated requests (schemathesis) and the server agree.
    #[test]
    fn documented_string_rules_equal_the_catalogs_validation() {
        let doc = serde_json::to_value(openapi()).unwrap();
        let host = |h: &str| {
            let mut s = tenancy::TenantSettings {
                hosts: vec![h.to_owned()],
                ..Default::default()
            };
            s.validate().is_ok()
        };
        let origin = |o: &str| {
            let mut s = tenancy::TenantSettings {
                cors_origins: vec![o.to_owned()],
                ..Default::default()
            };
            s.validate().is_ok()
        };
        type Validator<'a> = &'a dyn Fn(&str) -> bool;
        let rules: [(&str, Validator); 7] = [
            (
                "/paths/~1admin~1v1~1tenants~1{id}/get/parameters/0/schema",
                &|id| tenancy::TenantId::parse(id).is_ok(),
            ),
            (
                "/paths/~1admin~1v1~1tenants~1{id}~1keys~1{key_id}/delete/parameters/1/schema",
                &|id| tenancy::KeyId::parse(id).is_ok(),
            ),
            ("/components/schemas/Host", &host),
            ("/components/schemas/Origin", &origin),
            ("/components/schemas/NewTenant/properties/name", &|n| {
                tenancy::validate_name(n).is_ok()
            }),
            ("/components/schemas/NewTenant/properties/namespace", &|n| {
                tenancy::validate_namespace(n).is_ok()
            }),
            (
                "/components/schemas/CreateKeyRequest/properties/name",
                &|n| tenancy::validate_key_name(n).is_ok(),
            ),
        ];
        for (pointer, server) in rules {
            for value in corpus() {
                assert_eq!(
                    schema_accepts(&doc, pointer, &value),
                    server(&value),
                    "{pointer}: {value:?}"
                );
            }
        }
    }

    /// The documented numeric ranges are the catalog's.
    #[test]
    fn documented_ranges_are_the_catalogs() {
        let doc = serde_json::to_value(openapi()).unwrap();
        let settings = &doc["components"]["schemas"]["TenantSettings"]["properties"];
        assert_eq!(settings["max_ttl_secs"]["maximum"], rules::MAX_TTL_SECS);
        assert_eq!(settings["quota_bytes"]["maximum"], rules::UNLIMITED);
        let ttl = &doc["components"]["schemas"]["CreatePasteRequest"]["properties"]["ttl"];
        assert_eq!(ttl["maximum"], rules::MAX_TTL_SECS);
        for (field, (lo, hi)) in [
            ("id_length", (8, 16)),
            ("rate_per_sec", (1, 1_000_000)),
            ("max_paste_size", (1, rules::UNLIMITED)),
            ("review_max_links", (1, 1000)),
            ("review_max_versions", (1, 10_000)),
        ] {
            let ok = |v: i64| {
                let mut s = tenancy::TenantSettings::default();
                match field {
                    "id_length" => s.id_length = v,
                    "rate_per_sec" => s.rate_per_sec = v,
                    "review_max_links" => s.review_max_links = v,
                    "review_max_versions" => s.review_max_versions = v,
                    _ => s.max_paste_size = v,
                }
                s.validate().is_ok()
            };
            assert_eq!(settings[field]["minimum"], lo, "{field}");
            assert_eq!(settings[field]["maximum"], hi, "{field}");
            assert!(ok(lo) && ok(hi) && !ok(lo - 1) && !ok(hi + 1), "{field}");
        }
    }

    #[test]
    fn the_document_is_openapi_3_1_with_the_four_security_schemes() {
        let doc = serde_json::to_value(openapi()).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        let schemes = &doc["components"]["securitySchemes"];
        assert_eq!(schemes[API_KEY]["scheme"], "bearer");
        assert_eq!(schemes[ADMIN_TOKEN]["scheme"], "bearer");
        assert_eq!(schemes[DELETE_TOKEN]["scheme"], "bearer");
        assert_eq!(schemes[REVIEW_TOKEN]["scheme"], "bearer");
        assert!(openapi_json().ends_with("}\n"));
    }
}

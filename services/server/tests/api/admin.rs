//! The admin API (`/admin/v1/…`): off without a token, bearer-authenticated
//! otherwise, tenants and keys CRUD, strict bodies. Backend-agnostic (the
//! catalog is the same whatever the paste store).

use reqwest::{Method, Response};
use serde_json::{Value, json};
use testkit::TestApp;

use crate::tenants_support::status_json;

const TOKEN: &str = "admin-test-token-0123456789";
const ROUTE_NOT_FOUND: &str =
    r#"{"error":"Not found. Valid paths: POST /api/paste, GET /api/paste/:id"}"#;
const UNAUTHORIZED: &str = r#"{"error":"missing or malformed credentials: send Authorization: Bearer <token>","code":"unauthorized"}"#;

async fn spawn() -> TestApp {
    TestApp::spawn_configured(&[], |s| s.admin.token = TOKEN.into()).await
}

/// A request with the admin token and, for `Some(body)`, a JSON body.
async fn call(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> Response {
    let mut request = app.client.request(method, app.url(path)).bearer_auth(TOKEN);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    request.send().await.unwrap()
}

async fn create_tenant(app: &TestApp, namespace: &str) -> Value {
    let (status, body) = status_json(
        call(
            app,
            Method::POST,
            "/admin/v1/tenants",
            Some(json!({"name": "Team", "namespace": namespace})),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body
}

async fn create_key(app: &TestApp, tenant: &str) -> Value {
    let (status, body) = status_json(
        call(
            app,
            Method::POST,
            &format!("/admin/v1/tenants/{tenant}/keys"),
            Some(json!({"name": "ci"})),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body
}

/// Every admin route with a method it serves.
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/admin/v1/tenants"),
    ("POST", "/admin/v1/tenants"),
    ("GET", "/admin/v1/tenants/tnt_default"),
    ("PATCH", "/admin/v1/tenants/tnt_default"),
    ("DELETE", "/admin/v1/tenants/tnt_abc"),
    ("POST", "/admin/v1/tenants/tnt_default/disable"),
    ("POST", "/admin/v1/tenants/tnt_default/enable"),
    ("GET", "/admin/v1/tenants/tnt_default/keys"),
    ("POST", "/admin/v1/tenants/tnt_default/keys"),
    ("DELETE", "/admin/v1/tenants/tnt_default/keys/key_abc"),
    ("GET", "/admin/v1/tenants/tnt_default/usage"),
];

#[tokio::test]
async fn without_a_token_the_admin_api_does_not_exist() {
    let app = TestApp::spawn(&[]).await;
    let mut routes = ROUTES.to_vec();
    routes.push(("PUT", "/admin/v1/tenants")); // a wrong method too
    for (method, path) in routes {
        let response = app
            .client
            .request(method.parse().unwrap(), app.url(path))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        assert!(response.headers().get("www-authenticate").is_none());
        assert!(response.headers().get("allow").is_none());
        let body = response.text().await.unwrap();
        assert_eq!(
            (status, body.as_str()),
            (404, ROUTE_NOT_FOUND),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn missing_malformed_or_wrong_credentials_get_one_401() {
    let app = spawn().await;
    let bad: &[&[&str]] = &[
        &[],
        &["Bearer "],
        &["Bearer"],
        &["Basic YWRtaW46YWRtaW4="],
        &["Bearer wrong-token"],
        &[&format!("Bearer {TOKEN}x")],
        &[&format!("Bearer {}", &TOKEN[..TOKEN.len() - 1])],
        &[&format!("Bearer {TOKEN}"), &format!("Bearer {TOKEN}")],
        &[&format!("Bearer {}", "a".repeat(10 * 1024))],
        &["Bearer pst_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA_000000"],
    ];
    for (method, path) in ROUTES {
        for auth in bad {
            let mut request = app
                .client
                .request(method.parse().unwrap(), app.url(path))
                .header("content-type", "application/json")
                .body("{}");
            for value in *auth {
                request = request.header("authorization", *value);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            assert_eq!(
                response.headers()["www-authenticate"],
                "Bearer",
                "{method} {path} {auth:?}"
            );
            let body = response.text().await.unwrap();
            assert_eq!(
                (status, body.as_str()),
                (401, UNAUTHORIZED),
                "{method} {path}"
            );
        }
    }
}

#[tokio::test]
async fn a_tenant_api_key_is_forbidden_on_the_admin_api() {
    let app = spawn().await;
    let tenant = create_tenant(&app, "team-a").await;
    let key = create_key(&app, tenant["id"].as_str().unwrap()).await;
    let key = key["key"].as_str().unwrap();
    for (method, path) in ROUTES {
        let response = app
            .client
            .request(method.parse().unwrap(), app.url(path))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        let (status, body) = status_json(response).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (403, Some("forbidden")),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn tenants_can_be_created_listed_read_updated_disabled_and_deleted() {
    let app = spawn().await;
    let created = create_tenant(&app, "team-a").await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("tnt_"), "{created}");
    assert_eq!(created["namespace"], "team-a");
    assert_eq!(created["status"], "active");

    let response = call(&app, Method::GET, "/admin/v1/tenants", None).await;
    assert_eq!(
        response.headers()["content-type"],
        "application/json;charset=utf-8"
    );
    assert_eq!(response.headers()["cache-control"], "no-store");
    let (status, list) = status_json(response).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"tnt_default") && ids.contains(&id.as_str()),
        "{list}"
    );

    let path = format!("/admin/v1/tenants/{id}");
    let (status, read) = status_json(call(&app, Method::GET, &path, None).await).await;
    assert_eq!((status, &read), (200, &created));

    let (status, updated) = status_json(
        call(
            &app,
            Method::PATCH,
            &path,
            Some(json!({"name": "Team A", "hosts": ["A.example.com"], "max_paste_size": 1000})),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["name"], "Team A");
    assert_eq!(updated["settings"]["hosts"], json!(["a.example.com"]));
    assert_eq!(updated["settings"]["max_paste_size"], 1000);
    assert_eq!(updated["namespace"], "team-a");

    let (status, disabled) =
        status_json(call(&app, Method::POST, &format!("{path}/disable"), None).await).await;
    assert_eq!(
        (status, disabled["status"].as_str()),
        (200, Some("disabled"))
    );
    let (status, enabled) =
        status_json(call(&app, Method::POST, &format!("{path}/enable"), None).await).await;
    assert_eq!((status, enabled["status"].as_str()), (200, Some("active")));

    let (status, usage) =
        status_json(call(&app, Method::GET, &format!("{path}/usage"), None).await).await;
    assert_eq!(status, 200);
    assert_eq!(usage, json!({"bytes": 0, "pastes": 0, "requests": 0}));

    let response = call(&app, Method::DELETE, &path, None).await;
    assert_eq!(response.status(), 204);
    let (status, body) = status_json(call(&app, Method::GET, &path, None).await).await;
    assert_eq!(
        (status, body),
        (404, json!({"error": "not found", "code": "not-found"}))
    );
}

#[tokio::test]
async fn a_key_is_shown_once_and_listed_without_its_secret() {
    let app = spawn().await;
    let tenant = create_tenant(&app, "team-a").await;
    let tid = tenant["id"].as_str().unwrap();
    let created = create_key(&app, tid).await;
    let key = created["key"].as_str().unwrap().to_owned();
    let key_id = created["id"].as_str().unwrap().to_owned();
    assert!(key.starts_with("pst_live_"), "{created}");
    assert!(key_id.starts_with("key_"));
    assert_eq!(created["tenant_id"], tid);
    assert_eq!(created["name"], "ci");
    let secret = &key["pst_live_".len().."pst_live_".len() + 43];

    let keys_path = format!("/admin/v1/tenants/{tid}/keys");
    let response = call(&app, Method::GET, &keys_path, None).await;
    let text = response.text().await.unwrap();
    assert!(!text.contains(&key) && !text.contains(secret), "{text}");
    assert!(!text.contains("digest"), "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    let listed = &list["keys"][0];
    assert_eq!(listed["id"], key_id.as_str());
    assert!(listed.get("key").is_none());
    assert_eq!(listed["revoked_at"], Value::Null);

    let response = call(&app, Method::DELETE, &format!("{keys_path}/{key_id}"), None).await;
    assert_eq!(response.status(), 204);
    let (_, list) = status_json(call(&app, Method::GET, &keys_path, None).await).await;
    assert!(list["keys"][0]["revoked_at"].is_i64(), "{list}");
    assert!(!list.to_string().contains(secret));
}

#[tokio::test]
async fn a_key_id_under_another_tenant_is_not_found() {
    let app = spawn().await;
    let a = create_tenant(&app, "team-a").await;
    let b = create_tenant(&app, "team-b").await;
    let (a, b) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    let key = create_key(&app, a).await;
    let key_id = key["id"].as_str().unwrap();
    let (status, body) = status_json(
        call(
            &app,
            Method::DELETE,
            &format!("/admin/v1/tenants/{b}/keys/{key_id}"),
            None,
        )
        .await,
    )
    .await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not-found")));
    let (_, list) = status_json(
        call(
            &app,
            Method::GET,
            &format!("/admin/v1/tenants/{a}/keys"),
            None,
        )
        .await,
    )
    .await;
    assert_eq!(
        list["keys"][0]["revoked_at"],
        Value::Null,
        "A's key untouched"
    );
}

#[tokio::test]
async fn unknown_fields_are_refused_and_change_nothing() {
    let app = spawn().await;
    let tenant = create_tenant(&app, "team-a").await;
    let id = tenant["id"].as_str().unwrap();
    let path = format!("/admin/v1/tenants/{id}");
    let attempts = [
        (
            Method::PATCH,
            path.clone(),
            json!({"name": "x", "namespace": "other"}),
        ),
        (Method::PATCH, path.clone(), json!({"status": "disabled"})),
        (
            Method::PATCH,
            path.clone(),
            json!({"id": "tnt_other", "name": "y"}),
        ),
        (Method::PATCH, path.clone(), json!({"created_at": 1})),
        (
            Method::POST,
            "/admin/v1/tenants".to_owned(),
            json!({"name": "n", "namespace": "team-z", "id": "tnt_chosen"}),
        ),
        (
            Method::POST,
            "/admin/v1/tenants".to_owned(),
            json!({"name": "n", "namespace": "team-z", "settings": {"role": "admin"}}),
        ),
        (
            Method::POST,
            format!("{path}/keys"),
            json!({"name": "k", "tenant_id": "tnt_default"}),
        ),
    ];
    for (method, p, body) in attempts {
        let (status, answer) =
            status_json(call(&app, method.clone(), &p, Some(body.clone())).await).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (422, Some("unknown-field")),
            "{method} {p} {body}: {answer}"
        );
    }
    let (_, read) = status_json(call(&app, Method::GET, &path, None).await).await;
    assert_eq!(read, tenant, "nothing changed");
    let (_, list) = status_json(call(&app, Method::GET, "/admin/v1/tenants", None).await).await;
    assert_eq!(
        list["tenants"].as_array().unwrap().len(),
        2,
        "no tenant created"
    );
    let (_, keys) = status_json(call(&app, Method::GET, &format!("{path}/keys"), None).await).await;
    assert_eq!(keys["keys"], json!([]), "no key created");
}

#[tokio::test]
async fn bodies_must_be_json_objects_and_errors_show_no_parser_internals() {
    let app = spawn().await;
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json; charset=utf-16",
        "multipart/form-data; boundary=x",
    ] {
        let response = app
            .client
            .post(app.url("/admin/v1/tenants"))
            .bearer_auth(TOKEN)
            .header("content-type", content_type)
            .body(r#"{"name":"n","namespace":"ns"}"#)
            .send()
            .await
            .unwrap();
        let (status, body) = status_json(response).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (415, Some("unsupported-media-type")),
            "{content_type}"
        );
    }
    let response = app
        .client
        .post(app.url("/admin/v1/tenants"))
        .bearer_auth(TOKEN)
        .body(r#"{"name":"n","namespace":"ns"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415, "no content type");

    for raw in [
        "",
        "{",
        r#"{"name":"n","namespace":"ns"} x"#,
        "null",
        "[]",
        "\"str\"",
        "NaN",
        "\u{feff}{}",
    ] {
        let response = app
            .client
            .post(app.url("/admin/v1/tenants"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 400, "{raw:?}: {text}");
        assert!(!text.contains("line") && !text.contains("column"), "{text}");
    }
    let (status, body) = status_json(
        call(
            &app,
            Method::POST,
            "/admin/v1/tenants",
            Some(json!({"name": "n", "namespace": "ns", "settings": {"max_paste_size": "big"}})),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("invalid-field"))
    );
    let text = body.to_string();
    assert!(!text.contains("i64") && !text.contains("line"), "{text}");
    let (status, body) = status_json(
        call(
            &app,
            Method::POST,
            "/admin/v1/tenants",
            Some(json!({"name": "n"})),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (422, Some("missing field \"namespace\""))
    );
}

#[tokio::test]
async fn catalog_refusals_map_to_400_404_409_and_422() {
    let app = spawn().await;
    for path in [
        "/admin/v1/tenants/tnt_doesnotexist",
        "/admin/v1/tenants/tnt_doesnotexist/keys",
        "/admin/v1/tenants/tnt_doesnotexist/usage",
    ] {
        let (status, body) = status_json(call(&app, Method::GET, path, None).await).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("not-found")),
            "{path}"
        );
    }
    let (status, body) = status_json(
        call(
            &app,
            Method::POST,
            "/admin/v1/tenants/tnt_doesnotexist/keys",
            Some(json!({"name": "k"})),
        )
        .await,
    )
    .await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not-found")));
    for path in [
        "/admin/v1/tenants/not-an-id",
        "/admin/v1/tenants/key_abc",
        "/admin/v1/tenants/tnt_default/keys/tnt_abc",
    ] {
        let method = if path.contains("/keys/") {
            Method::DELETE
        } else {
            Method::GET
        };
        let (status, body) = status_json(call(&app, method, path, None).await).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (400, Some("invalid-id")),
            "{path}"
        );
    }

    create_tenant(&app, "team-a").await;
    let (status, body) = status_json(
        call(
            &app,
            Method::POST,
            "/admin/v1/tenants",
            Some(json!({"name": "Again", "namespace": "team-a"})),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("conflict")),
        "{body}"
    );

    for invalid in [
        json!({"name": "n", "namespace": "Bad Namespace"}),
        json!({"name": "", "namespace": "team-b"}),
        json!({"name": "n", "namespace": "team-b", "settings": {"max_paste_size": 0}}),
        json!({"name": "n", "namespace": "team-b", "settings": {"default_ttl_secs": 10, "max_ttl_secs": 5}}),
        json!({"name": "n", "namespace": "team-b", "settings": {"hosts": ["not a host"]}}),
    ] {
        let (status, body) = status_json(
            call(
                &app,
                Method::POST,
                "/admin/v1/tenants",
                Some(invalid.clone()),
            )
            .await,
        )
        .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (422, Some("invalid-value")),
            "{invalid}"
        );
    }
    let (status, body) =
        status_json(call(&app, Method::DELETE, "/admin/v1/tenants/tnt_default", None).await).await;
    assert_eq!(
        (status, body["code"].as_str(), body["error"].as_str()),
        (
            409,
            Some("protected"),
            Some("the default tenant cannot be deleted")
        ),
        "{body}"
    );
    let (status, _) =
        status_json(call(&app, Method::GET, "/admin/v1/tenants/tnt_default", None).await).await;
    assert_eq!(status, 200, "the default tenant is still there");
}

#[tokio::test]
async fn a_wrong_method_gets_405_with_allow() {
    let app = spawn().await;
    for (method, path, allow) in [
        ("PUT", "/admin/v1/tenants", "GET, HEAD, POST"),
        (
            "POST",
            "/admin/v1/tenants/tnt_default",
            "GET, HEAD, PATCH, DELETE",
        ),
        ("GET", "/admin/v1/tenants/tnt_default/disable", "POST"),
        (
            "GET",
            "/admin/v1/tenants/tnt_default/keys/key_abc",
            "DELETE",
        ),
        ("DELETE", "/admin/v1/tenants/tnt_default/usage", "GET, HEAD"),
    ] {
        let response = call(&app, method.parse().unwrap(), path, None).await;
        assert_eq!(response.headers()["allow"], allow, "{method} {path}");
        let (status, body) = status_json(response).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (405, Some("method-not-allowed")),
            "{method} {path}"
        );
    }
}

/// With `admin.addr` set, the admin API is served only there; the public
/// listener answers `/admin/…` exactly like any unknown path, and the admin
/// listener serves no paste routes.
#[tokio::test]
async fn the_admin_api_can_live_on_its_own_listener() {
    let app = TestApp::spawn_configured(&[], |s| {
        s.admin.token = TOKEN.into();
        s.admin.addr = "127.0.0.1:0".into();
    })
    .await;
    let admin_url = app.admin_url.clone().expect("admin listener bound");
    let public = call(&app, Method::GET, "/admin/v1/tenants", None).await;
    assert_eq!(public.status(), 404);
    assert_eq!(public.text().await.unwrap(), ROUTE_NOT_FOUND);

    let internal = app
        .client
        .get(format!("{admin_url}/admin/v1/tenants"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(internal.status(), 200);
    let tenants: Value = internal.json().await.unwrap();
    let tenant = tenants["tenants"][0]["id"].as_str().unwrap().to_owned();

    let key = app
        .client
        .post(format!("{admin_url}/admin/v1/tenants/{tenant}/keys"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(json!({"name": "ci"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(key.status(), 201);
    let key: Value = key.json().await.unwrap();
    let key = key["key"].as_str().unwrap().to_owned();
    let as_tenant = app
        .client
        .get(format!("{admin_url}/admin/v1/tenants"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(
        as_tenant.status(),
        403,
        "a tenant key on the admin listener"
    );

    let paste = app
        .client
        .post(format!("{admin_url}/api/paste"))
        .body(r#"{"data":"abc"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(paste.status(), 404, "no paste routes on the admin listener");
    let probe = app
        .client
        .get(format!("{admin_url}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(probe.status(), 200);
    // The public listener still serves pastes.
    assert_eq!(app.create("abc").await.status(), 201);
}

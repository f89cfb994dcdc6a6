//! Shared fixture of the tenancy tests: a server with the admin API on, its
//! catalog on SQLite (the default) or on a fresh PostgreSQL database, and
//! small clients for the admin API and for tenant-keyed paste requests.

// Each test file uses a part of the fixture.
#![allow(dead_code)]

use reqwest::{Method, RequestBuilder, Response};
use serde_json::{Value, json};
use tenancy::conformance::env::TestDb;
use testkit::TestApp;

pub const ADMIN_TOKEN: &str = "tenancy-admin-token-0123456789";

/// Which database the catalog runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// A running server and the database its catalog lives in (dropped with it).
pub struct Tenanted {
    pub app: TestApp,
    pub db: Db,
    _pg: Option<TestDb>,
}

impl std::ops::Deref for Tenanted {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

/// The databases to run on: SQLite always, PostgreSQL when configured
/// (`PLANSHARE_TEST_DATABASE_URL`; required under CI).
pub async fn databases() -> Vec<Db> {
    let mut dbs = vec![Db::Sqlite];
    if tenancy::conformance::env::postgres().await.is_some() {
        dbs.push(Db::Postgres);
    }
    dbs
}

/// A server with the admin API on, its catalog on `db`, extra `vars`
/// (e.g. `PLANSHARE_RATE_LIMITS=on`) and a last `adjust` of its settings.
pub async fn spawn(
    db: Db,
    vars: &[(&str, &str)],
    adjust: impl FnOnce(&mut planshare_server::Settings),
) -> Tenanted {
    let pg = match db {
        Db::Sqlite => None,
        Db::Postgres => Some(
            tenancy::conformance::env::postgres()
                .await
                .unwrap_or_else(|| panic!("PostgreSQL is not configured")),
        ),
    };
    let catalog = pg.as_ref().map(|pg| pg.config.clone());
    let app = TestApp::spawn_configured(vars, |s| {
        s.admin.token = ADMIN_TOKEN.into();
        if let Some(catalog) = catalog {
            s.catalog = catalog;
        }
        adjust(s);
    })
    .await;
    Tenanted { app, db, _pg: pg }
}

/// An admin request with an optional JSON body.
pub async fn admin(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> Response {
    let mut request = app
        .client
        .request(method, app.url(path))
        .bearer_auth(ADMIN_TOKEN);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    request.send().await.unwrap()
}

/// Status and JSON body (`Null` for an empty body).
pub async fn status_json(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    (status, json)
}

/// A tenant made through the admin API, with one API key.
#[derive(Clone, Debug)]
pub struct Tenant {
    pub id: String,
    pub namespace: String,
    pub host: String,
    pub key: String,
    pub key_id: String,
}

/// Creates tenant `label` (host `<label>.example`, CORS origin
/// `https://<label>.example`) with `settings` merged over those, and a key.
pub async fn tenant(app: &TestApp, label: &str, settings: Value) -> Tenant {
    let host = format!("{label}.example");
    let mut all = json!({"hosts": [host], "cors_origins": [format!("https://{label}.example")]});
    if let (Some(all), Some(extra)) = (all.as_object_mut(), settings.as_object()) {
        for (k, v) in extra {
            all.insert(k.clone(), v.clone());
        }
    }
    let (status, body) = status_json(
        admin(
            app,
            Method::POST,
            "/admin/v1/tenants",
            Some(json!({"name": label, "namespace": label, "settings": all})),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "create tenant {label}: {body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let (key_id, key) = new_key(app, &id).await;
    Tenant {
        id,
        namespace: label.to_owned(),
        host,
        key,
        key_id,
    }
}

/// A fresh key of tenant `id`: `(key id, key)`.
pub async fn new_key(app: &TestApp, id: &str) -> (String, String) {
    let (status, body) = status_json(
        admin(
            app,
            Method::POST,
            &format!("/admin/v1/tenants/{id}/keys"),
            Some(json!({"name": "test"})),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "create key: {body}");
    (
        body["id"].as_str().unwrap().to_owned(),
        body["key"].as_str().unwrap().to_owned(),
    )
}

/// A request with `key` as bearer.
pub fn keyed(app: &TestApp, method: Method, path: &str, key: &str) -> RequestBuilder {
    app.client.request(method, app.url(path)).bearer_auth(key)
}

/// `POST /api/v1/pastes` with `key` and a JSON body.
pub async fn create_v1(app: &TestApp, key: &str, body: Value) -> Response {
    keyed(app, Method::POST, "/api/v1/pastes", key)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

/// Creates a paste for `key`'s tenant and returns its id.
pub async fn create_v1_ok(app: &TestApp, key: &str, data: &str) -> String {
    let (status, body) = status_json(create_v1(app, key, json!({"data": data})).await).await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

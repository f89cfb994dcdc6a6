//! Tenant isolation over HTTP (the checks labelled C1–C9 below), on every
//! catalog database the suite has (SQLite always, PostgreSQL when
//! `PLANSHARE_TEST_DATABASE_URL` is set): each test loops over them and names
//! the database in its assertion messages.
//!
//! - C1/C2/C4: another tenant's paste ids, read, deleted or listed with a
//!   tenant's key (or through its host), answer exactly as absent ids do, and
//!   the owner's pastes and key are untouched afterwards.
//! - C3: a tenant key is refused (403) on every admin route, its own tenant's
//!   included, and changes nothing.
//! - C5: privileged fields in a create body are refused (422) and set nothing.
//! - C7: CORS answers follow the tenant the request is for (the Host's for a
//!   preflight, the key's for a keyed request), exact origins only.
//! - C8: one id in two tenants' namespaces never mixes; reads are private.
//! - C9: quotas hold under a concurrent burst, without touching a neighbour.
//! - And the tenant-level behaviour the isolation rests on: Idempotency-Key,
//!   burn-after-read under concurrency, key revocation (also across replicas
//!   sharing one catalog), disabled and deleted tenants, anonymous creates,
//!   per-tenant TTL, size and id length.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder, Response};
use serde_json::{Value, json};
use testkit::TestApp;
use tokio::task::JoinHandle;

use crate::tenants_support::{
    ADMIN_TOKEN, Db, Tenant, Tenanted, admin, create_v1, create_v1_ok, databases, keyed, new_key,
    spawn, status_json, tenant,
};

// ---- helpers --------------------------------------------------------------

/// A response as a client sees it.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: HeaderMap,
    text: String,
}

impl Reply {
    async fn of(response: Response) -> Reply {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        Reply {
            status,
            headers,
            text,
        }
    }

    fn json(&self) -> Value {
        if self.text.is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// Everything but the `Date` header, for byte-for-byte comparisons.
    fn comparable(&self) -> (u16, Vec<(String, Vec<u8>)>, &str) {
        let mut headers: Vec<(String, Vec<u8>)> = self
            .headers
            .iter()
            .filter(|(name, _)| *name != reqwest::header::DATE)
            .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
            .collect();
        headers.sort();
        (self.status, headers, &self.text)
    }

    fn varies_on_origin(&self) -> bool {
        self.headers
            .get_all(reqwest::header::VARY)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|v| v.trim().eq_ignore_ascii_case("origin"))
    }
}

async fn send(request: RequestBuilder) -> Reply {
    Reply::of(request.send().await.unwrap()).await
}

/// Sends `request` on its own task (for concurrent bursts).
fn send_later(request: RequestBuilder) -> JoinHandle<Reply> {
    tokio::spawn(send(request))
}

/// A request with `Host: host` and no credentials.
fn at_host(app: &TestApp, method: Method, path: &str, host: &str) -> RequestBuilder {
    app.client
        .request(method, app.url(path))
        .header("host", host)
}

/// `request` with a JSON body.
fn with_json(request: RequestBuilder, body: &Value) -> RequestBuilder {
    request
        .header("content-type", "application/json")
        .body(body.to_string())
}

/// A fresh id of `len` characters that no test created.
fn absent_id(len: usize) -> String {
    paste_store::PasteId::generate(len)
        .unwrap()
        .as_str()
        .to_owned()
}

/// The ids of one page of `GET /api/v1/pastes{query}` and its `next`.
async fn list_page(app: &TestApp, db: Db, key: &str, query: &str) -> (Vec<String>, Option<String>) {
    let reply = send(keyed(
        app,
        Method::GET,
        &format!("/api/v1/pastes{query}"),
        key,
    ))
    .await;
    let body = reply.json();
    assert_eq!(reply.status, 200, "{db:?}: list{query}: {body}");
    let ids = body["pastes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect();
    (ids, body["next"].as_str().map(str::to_owned))
}

/// Every id the key's tenant lists, following `next` with pages of `limit`.
async fn list_all(app: &TestApp, db: Db, key: &str, limit: usize) -> Vec<String> {
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..10_000 {
        let query = match &after {
            None => format!("?limit={limit}"),
            Some(a) => format!("?limit={limit}&after={a}"),
        };
        let (ids, next) = list_page(app, db, key, &query).await;
        assert!(ids.len() <= limit, "{db:?}: page larger than {limit}");
        all.extend(ids);
        match next {
            Some(n) => {
                assert_eq!(all.last(), Some(&n), "{db:?}: next is the page's last id");
                after = Some(n);
            }
            None => return all,
        }
    }
    panic!("{db:?}: the list never ends");
}

fn set(ids: &[String]) -> BTreeSet<String> {
    ids.iter().cloned().collect()
}

/// An admin GET that must answer 200.
async fn admin_get(app: &TestApp, db: Db, path: &str) -> Value {
    let (status, body) = status_json(admin(app, Method::GET, path, None).await).await;
    assert_eq!(status, 200, "{db:?}: GET {path}: {body}");
    body
}

/// A tenant's usage without `requests` (a counter every paste request bumps).
async fn usage(app: &TestApp, db: Db, tenant: &Tenant) -> (i64, i64) {
    let body = admin_get(app, db, &format!("/admin/v1/tenants/{}/usage", tenant.id)).await;
    (
        body["bytes"].as_i64().unwrap(),
        body["pastes"].as_i64().unwrap(),
    )
}

/// Everything an admin can read about `tenants` (usage without `requests`).
async fn admin_snapshot(app: &TestApp, db: Db, tenants: &[&Tenant]) -> Vec<Value> {
    let mut all = vec![admin_get(app, db, "/admin/v1/tenants").await];
    for t in tenants {
        all.push(admin_get(app, db, &format!("/admin/v1/tenants/{}", t.id)).await);
        all.push(admin_get(app, db, &format!("/admin/v1/tenants/{}/keys", t.id)).await);
        let (bytes, pastes) = usage(app, db, t).await;
        all.push(json!([bytes, pastes]));
    }
    all
}

/// A second server on the same catalog as `first` (another replica). Its
/// paste store is its own: only key and tenant checks are shared.
async fn replica(first: &Tenanted) -> TestApp {
    let catalog = first.settings.catalog.clone();
    TestApp::spawn_configured(&[], move |s| {
        s.admin.token = ADMIN_TOKEN.into();
        s.catalog = catalog;
    })
    .await
}

/// Polls `probe` (every 20 ms, for at most `limit`) until it answers
/// `status`; returns how long that took.
async fn until_status(
    db: Db,
    what: &str,
    status: u16,
    limit: Duration,
    probe: impl Fn() -> RequestBuilder,
) -> Duration {
    let started = Instant::now();
    loop {
        let reply = send(probe()).await;
        if reply.status == status {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{db:?}: {what}: still {} after {limit:?}: {}",
            reply.status,
            reply.text
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How a cross-tenant probe presents itself.
#[derive(Clone, Copy, Debug)]
enum As<'a> {
    /// `Authorization: Bearer <API key>`.
    Key(&'a str),
    /// An API key with another tenant's `Host` (the key must win).
    KeyAtHost(&'a str, &'a str),
    /// No credentials, `Host: <host>`.
    Host(&'a str),
    /// `Host: <host>` with a bearer that is not an API key (a delete token).
    HostBearer(&'a str, &'a str),
}

fn request_as(app: &TestApp, method: Method, path: &str, who: As<'_>) -> RequestBuilder {
    match who {
        As::Key(key) => keyed(app, method, path, key),
        As::KeyAtHost(key, host) => keyed(app, method, path, key).header("host", host),
        As::Host(host) => at_host(app, method, path, host),
        As::HostBearer(host, bearer) => at_host(app, method, path, host).bearer_auth(bearer),
    }
}

/// The routes that take a paste id.
const ID_ROUTES: [(&str, &str); 4] = [
    ("GET", "/api/paste/"),
    ("GET", "/api/v1/pastes/"),
    ("DELETE", "/api/paste/"),
    ("DELETE", "/api/v1/pastes/"),
];

// ---- C1 / C2 / C4 ---------------------------------------------------------

#[tokio::test]
async fn another_tenants_paste_ids_answer_exactly_as_absent_ids_and_stay_intact() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({"allow_anonymous": true})).await;
        let b = tenant(&app, "b", json!({"allow_anonymous": true})).await;

        // B's pastes: keyed, keyed burn-after-read, anonymous through its host.
        let b_plain = create_v1_ok(&app, &b.key, "b-plain-paste").await;
        let burn = Reply::of(
            create_v1(
                &app,
                &b.key,
                json!({"data": "b-burn-paste", "burnAfterRead": true}),
            )
            .await,
        )
        .await;
        assert_eq!(burn.status, 201, "{db:?}: {}", burn.text);
        let b_burn = burn.json()["id"].as_str().unwrap().to_owned();
        let compat = send(with_json(
            at_host(&app, Method::POST, "/api/paste", &b.host),
            &json!({"data": "b-compat-paste"}),
        ))
        .await;
        assert_eq!(compat.status, 201, "{db:?}: {}", compat.text);
        let b_compat = compat.json()["id"].as_str().unwrap().to_owned();
        let b_token = compat.json()["deleteToken"].as_str().unwrap().to_owned();
        let b_ids = [b_plain.clone(), b_burn.clone(), b_compat.clone()];

        let mut a_ids = Vec::new();
        for i in 0..3 {
            a_ids.push(create_v1_ok(&app, &a.key, &format!("a-paste-{i}")).await);
        }

        // What B sees before (the burn paste is read only at the end).
        let b_list_before = send(keyed(&app, Method::GET, "/api/v1/pastes", &b.key)).await;
        assert_eq!(
            set(&list_all(&app, db, &b.key, 100).await),
            set(&b_ids),
            "{db:?}: B lists its three pastes"
        );
        let mut b_reads_before = Vec::new();
        for id in [&b_plain, &b_compat] {
            let v1 = send(keyed(
                &app,
                Method::GET,
                &format!("/api/v1/pastes/{id}"),
                &b.key,
            ))
            .await;
            let compat = send(at_host(
                &app,
                Method::GET,
                &format!("/api/paste/{id}"),
                &b.host,
            ))
            .await;
            assert_eq!(
                (v1.status, compat.status),
                (200, 200),
                "{db:?}: B reads {id}"
            );
            b_reads_before.push((v1, compat));
        }

        // A, every way it can present itself, on every id-taking route.
        let who = [
            As::Key(&a.key),
            As::KeyAtHost(&a.key, &b.host),
            As::Host(&a.host),
            As::HostBearer(&a.host, &b_token),
        ];
        for id in &b_ids {
            for (method, prefix) in ID_ROUTES {
                for w in who {
                    // A paste's own delete token deletes it through any host
                    // (attack::a_delete_token_deletes_a_keyed_tenants_paste_without_its_key);
                    // here it must not reach B's other pastes nor read any.
                    if method == "DELETE" && *id == b_compat && matches!(w, As::HostBearer(..)) {
                        continue;
                    }
                    let method: Method = method.parse().unwrap();
                    let absent = absent_id(id.len());
                    let real = send(request_as(
                        &app,
                        method.clone(),
                        &format!("{prefix}{id}"),
                        w,
                    ))
                    .await;
                    let missing = send(request_as(
                        &app,
                        method.clone(),
                        &format!("{prefix}{absent}"),
                        w,
                    ))
                    .await;
                    assert_eq!(
                        real.comparable(),
                        missing.comparable(),
                        "{db:?}: {method} {prefix}<B's id> as {w:?} differs from an absent id"
                    );
                    assert!(
                        matches!(real.status, 401 | 404),
                        "{db:?}: {method} {prefix}<B's id> as {w:?}: {}",
                        real.status
                    );
                }
            }
        }

        // A's list holds A's pastes only, whole or a page at a time, and no
        // query parameter turns it into B's.
        let mut a_sorted = a_ids.clone();
        a_sorted.sort();
        assert_eq!(list_all(&app, db, &a.key, 1000).await, a_sorted, "{db:?}");
        assert_eq!(list_all(&app, db, &a.key, 1).await, a_sorted, "{db:?}");
        assert_eq!(list_all(&app, db, &a.key, 2).await, a_sorted, "{db:?}");
        for b_id in &b_ids {
            let (after, _) = list_page(&app, db, &a.key, &format!("?after={b_id}")).await;
            let expected: Vec<String> = a_sorted
                .iter()
                .filter(|id| id.as_str() > b_id.as_str())
                .cloned()
                .collect();
            assert_eq!(after, expected, "{db:?}: ?after=<B's id> pages A's list");
        }
        for query in [
            format!("?tenant={}", b.id),
            format!("?tenant_id={}", b.id),
            format!("?namespace={}", b.namespace),
        ] {
            let reply = send(keyed(
                &app,
                Method::GET,
                &format!("/api/v1/pastes{query}"),
                &a.key,
            ))
            .await;
            assert_eq!(reply.status, 422, "{db:?}: {query}: {}", reply.text);
            assert!(
                b_ids.iter().all(|id| !reply.text.contains(id.as_str())),
                "{db:?}: {query}"
            );
        }
        // Listing needs a key: a host alone lists nothing.
        let anonymous = send(at_host(&app, Method::GET, "/api/v1/pastes", &b.host)).await;
        assert_eq!(anonymous.status, 401, "{db:?}: {}", anonymous.text);

        // C2: B's pastes, list and key are as they were.
        let b_list_after = send(keyed(&app, Method::GET, "/api/v1/pastes", &b.key)).await;
        assert_eq!(
            b_list_after.comparable(),
            b_list_before.comparable(),
            "{db:?}: B's list changed"
        );
        for ((before_v1, before_compat), id) in b_reads_before.iter().zip([&b_plain, &b_compat]) {
            let v1 = send(keyed(
                &app,
                Method::GET,
                &format!("/api/v1/pastes/{id}"),
                &b.key,
            ))
            .await;
            let compat = send(at_host(
                &app,
                Method::GET,
                &format!("/api/paste/{id}"),
                &b.host,
            ))
            .await;
            assert_eq!(v1.comparable(), before_v1.comparable(), "{db:?}: {id}");
            assert_eq!(compat.comparable(), before_compat.comparable(), "{db:?}");
        }
        let burnt = send(keyed(
            &app,
            Method::GET,
            &format!("/api/v1/pastes/{b_burn}"),
            &b.key,
        ))
        .await;
        assert_eq!(
            (burnt.status, burnt.json()["data"].as_str()),
            (200, Some("b-burn-paste")),
            "{db:?}: B's burn-after-read paste survived A's reads"
        );
        // B's delete token still deletes through B's host; A's key still works.
        let deleted = send(
            at_host(
                &app,
                Method::DELETE,
                &format!("/api/v1/pastes/{b_compat}"),
                &b.host,
            )
            .bearer_auth(&b_token),
        )
        .await;
        assert_eq!(deleted.status, 204, "{db:?}: {}", deleted.text);
        assert_eq!(set(&list_all(&app, db, &b.key, 100).await), set(&[b_plain]));
        assert_eq!(list_all(&app, db, &a.key, 100).await, a_sorted, "{db:?}");
    }
}

// ---- C3 -------------------------------------------------------------------

#[tokio::test]
async fn a_tenant_key_is_forbidden_on_every_admin_route_and_changes_nothing() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({})).await;
        let b = tenant(&app, "b", json!({"quota_pastes": 10})).await;
        let b_paste = create_v1_ok(&app, &b.key, "b-data").await;

        let before = admin_snapshot(&app, db, &[&a, &b]).await;

        let mut routes: Vec<(Method, String, Option<Value>)> = vec![
            (Method::GET, "/admin/v1/tenants".into(), None),
            (
                Method::POST,
                "/admin/v1/tenants".into(),
                Some(json!({"name": "evil", "namespace": "evil"})),
            ),
        ];
        for (target, key_id) in [(&b, &b.key_id), (&a, &a.key_id), (&a, &b.key_id)] {
            let base = format!("/admin/v1/tenants/{}", target.id);
            routes.extend([
                (Method::GET, base.clone(), None),
                (
                    Method::PATCH,
                    base.clone(),
                    Some(json!({"quota_bytes": 1, "hosts": ["evil.example"], "allow_anonymous": true})),
                ),
                (Method::POST, format!("{base}/disable"), None),
                (Method::POST, format!("{base}/enable"), None),
                (Method::GET, format!("{base}/keys"), None),
                (
                    Method::POST,
                    format!("{base}/keys"),
                    Some(json!({"name": "evil"})),
                ),
                (Method::DELETE, format!("{base}/keys/{key_id}"), None),
                (Method::GET, format!("{base}/usage"), None),
                (Method::DELETE, base.clone(), None),
            ]);
        }
        for (method, path, body) in &routes {
            for host in [None, Some(b.host.as_str())] {
                let mut request = keyed(&app, method.clone(), path, &a.key);
                if let Some(host) = host {
                    request = request.header("host", host);
                }
                if let Some(body) = body {
                    request = with_json(request, body);
                }
                let reply = send(request).await;
                assert_eq!(
                    (reply.status, reply.json()["code"].as_str()),
                    (403, Some("forbidden")),
                    "{db:?}: {method} {path} (host {host:?}) with A's key"
                );
            }
        }

        assert_eq!(
            admin_snapshot(&app, db, &[&a, &b]).await,
            before,
            "{db:?}: the catalog changed"
        );
        let read = send(keyed(
            &app,
            Method::GET,
            &format!("/api/v1/pastes/{b_paste}"),
            &b.key,
        ))
        .await;
        assert_eq!(
            (read.status, read.json()["data"].as_str()),
            (200, Some("b-data")),
            "{db:?}: B's key and paste still work"
        );
        assert!(list_all(&app, db, &a.key, 100).await.is_empty(), "{db:?}");
    }
}

// ---- C5 -------------------------------------------------------------------

#[tokio::test]
async fn privileged_fields_in_a_create_are_refused_and_set_nothing() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(
            &app,
            "a",
            json!({"quota_bytes": 100_000, "max_ttl_secs": 3600, "default_ttl_secs": 60, "allow_anonymous": true}),
        )
        .await;
        let b = tenant(&app, "b", json!({})).await;
        let a_before = admin_get(&app, db, &format!("/admin/v1/tenants/{}", a.id)).await;
        let b_before = admin_get(&app, db, &format!("/admin/v1/tenants/{}", b.id)).await;

        let privileged = [
            ("quota_bytes", json!(1_000_000_000_000_i64)),
            ("quota_pastes", json!(1_000_000)),
            ("tenant_id", json!(b.id)),
            ("tenantId", json!(b.id)),
            ("tenant", json!(b.id)),
            ("namespace", json!(b.namespace)),
            ("max_ttl_secs", json!(999_999_999)),
            ("maxTtlSecs", json!(999_999_999)),
            ("cors_origins", json!(["https://evil.example"])),
            ("hosts", json!(["evil.example"])),
            ("allow_anonymous", json!(false)),
            ("role", json!("admin")),
            ("plan", json!("enterprise")),
            ("settings", json!({"quota_bytes": 1})),
            ("id", json!("ChosenId")),
            ("deleteToken", json!("chosen-token")),
            ("expiresAt", json!(u64::MAX)),
            ("createdAt", json!(0)),
        ];
        for (field, value) in &privileged {
            let mut body = json!({"data": "mass-assignment"});
            body[*field] = value.clone();
            let reply = Reply::of(create_v1(&app, &a.key, body).await).await;
            let json = reply.json();
            assert_eq!(
                (reply.status, json["code"].as_str()),
                (422, Some("unknown-field")),
                "{db:?}: {field}: {json}"
            );
            assert_eq!(
                json["error"],
                format!("unknown field \"{field}\""),
                "{db:?}: {field}"
            );
        }
        assert!(
            list_all(&app, db, &a.key, 100).await.is_empty(),
            "{db:?}: nothing stored"
        );
        assert_eq!(usage(&app, db, &a).await, (0, 0), "{db:?}");

        // The compat route ignores unknown fields (as upstream does): they
        // still set nothing: the paste is A's, with A's default TTL, not burnt.
        let mut body = json!({"data": "compat-extras"});
        for (field, value) in &privileged {
            body[*field] = value.clone();
        }
        body["ttl"] = json!(999_999_999);
        body["burnAfterRead"] = json!(true);
        let before_ms = paste_store::now_ms();
        let created = send(with_json(
            at_host(&app, Method::POST, "/api/paste", &a.host),
            &body,
        ))
        .await;
        assert_eq!(created.status, 201, "{db:?}: {}", created.text);
        let created = created.json();
        let id = created["id"].as_str().unwrap().to_owned();
        assert_ne!(id, "ChosenId", "{db:?}");
        let expires = created["expiresAt"].as_u64().unwrap();
        assert!(
            expires >= before_ms + 60_000 && expires <= paste_store::now_ms() + 60_000,
            "{db:?}: expiresAt {expires} is not A's default TTL"
        );
        assert_eq!(created.get("burnAfterRead"), None, "{db:?}: {created}");
        for _ in 0..2 {
            let read = send(at_host(
                &app,
                Method::GET,
                &format!("/api/paste/{id}"),
                &a.host,
            ))
            .await;
            assert_eq!(read.status, 200, "{db:?}: not burnt");
        }
        assert_eq!(list_all(&app, db, &a.key, 100).await, vec![id], "{db:?}");
        assert!(list_all(&app, db, &b.key, 100).await.is_empty(), "{db:?}");

        assert_eq!(
            admin_get(&app, db, &format!("/admin/v1/tenants/{}", a.id)).await,
            a_before,
            "{db:?}: A's settings changed"
        );
        assert_eq!(
            admin_get(&app, db, &format!("/admin/v1/tenants/{}", b.id)).await,
            b_before,
            "{db:?}: B's settings changed"
        );
    }
}

// ---- C7 -------------------------------------------------------------------

#[tokio::test]
async fn cors_answers_follow_the_tenant_the_request_is_for() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({"allow_anonymous": true})).await;
        let b = tenant(&app, "b", json!({})).await;
        let a_origin = "https://a.example";
        let b_origin = "https://b.example";
        let localhost = "http://localhost:5173"; // always allowed, as upstream
        let origins = [
            a_origin,
            b_origin,
            localhost,
            "null",
            "https://a.example.evil.com",
            "https://evil.com/a.example",
            "HTTPS://A.EXAMPLE",
            "https://a.example/",
            "http://a.example",
            "https://a.example:443",
        ];
        let b_paste = create_v1_ok(&app, &b.key, "b-data").await;

        let check = |what: &str, origin: &str, reply: &Reply, allowed: &[&str]| {
            let acao = reply.header("access-control-allow-origin");
            let expected = allowed.contains(&origin).then_some(origin);
            assert_eq!(acao, expected, "{db:?}: {what} with Origin {origin}");
            assert_ne!(acao, Some("*"), "{db:?}: {what}");
            assert_ne!(acao, Some("null"), "{db:?}: {what}");
            assert_eq!(
                reply.header("access-control-allow-credentials"),
                None,
                "{db:?}: {what}"
            );
            assert!(
                reply.varies_on_origin(),
                "{db:?}: {what} with Origin {origin} lacks Vary: Origin"
            );
        };

        for origin in origins {
            // Preflights carry no key: the Host's tenant decides.
            for (host, allowed) in [
                (&a.host, [a_origin, localhost]),
                (&b.host, [b_origin, localhost]),
            ] {
                let reply = send(
                    at_host(&app, Method::OPTIONS, "/api/v1/pastes", host)
                        .header("origin", origin)
                        .header("access-control-request-method", "POST")
                        .header(
                            "access-control-request-headers",
                            "authorization, content-type, idempotency-key",
                        ),
                )
                .await;
                assert_eq!(reply.status, 204, "{db:?}: preflight at {host}");
                check(&format!("preflight at {host}"), origin, &reply, &allowed);
                if reply.header("access-control-allow-origin").is_some() {
                    let headers = reply.header("access-control-allow-headers").unwrap();
                    assert!(headers.contains("Authorization"), "{db:?}: {headers}");
                }
            }
            // An unmapped host is the default tenant's (the server's own list).
            let reply = send(
                app.client
                    .request(Method::OPTIONS, app.url("/api/v1/pastes"))
                    .header("origin", origin)
                    .header("access-control-request-method", "POST"),
            )
            .await;
            check(
                "preflight at the default host",
                origin,
                &reply,
                &[localhost],
            );

            // Keyed requests: the key's tenant decides, whatever the Host.
            let b_at_a = |method: Method, path: &str| {
                keyed(&app, method, path, &b.key)
                    .header("host", &a.host)
                    .header("origin", origin)
            };
            let list = send(b_at_a(Method::GET, "/api/v1/pastes")).await;
            assert_eq!(list.status, 200, "{db:?}: {}", list.text);
            check(
                "B's keyed list at A's host",
                origin,
                &list,
                &[b_origin, localhost],
            );
            let read = send(b_at_a(Method::GET, &format!("/api/v1/pastes/{b_paste}"))).await;
            assert_eq!(read.status, 200, "{db:?}");
            check(
                "B's keyed read at A's host",
                origin,
                &read,
                &[b_origin, localhost],
            );
            let missing = send(b_at_a(
                Method::GET,
                &format!("/api/v1/pastes/{}", absent_id(8)),
            ))
            .await;
            assert_eq!(missing.status, 404, "{db:?}");
            check(
                "B's keyed 404 at A's host",
                origin,
                &missing,
                &[b_origin, localhost],
            );
            let created = send(with_json(
                b_at_a(Method::POST, "/api/v1/pastes"),
                &json!({"data": "cors"}),
            ))
            .await;
            assert_eq!(created.status, 201, "{db:?}: {}", created.text);
            check(
                "B's keyed create at A's host",
                origin,
                &created,
                &[b_origin, localhost],
            );

            // Anonymous requests: the Host's tenant.
            let anonymous = send(
                with_json(
                    at_host(&app, Method::POST, "/api/paste", &a.host),
                    &json!({"data": "cors"}),
                )
                .header("origin", origin),
            )
            .await;
            assert_eq!(anonymous.status, 201, "{db:?}");
            check(
                "anonymous create at A's host",
                origin,
                &anonymous,
                &[a_origin, localhost],
            );

            // A bad key never resolves a tenant: the Host's answer, and 401.
            let bad = send(
                keyed(
                    &app,
                    Method::GET,
                    "/api/v1/pastes",
                    "pst_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA_000000",
                )
                .header("host", &b.host)
                .header("origin", origin),
            )
            .await;
            assert_eq!(bad.status, 401, "{db:?}");
            check("bad key at B's host", origin, &bad, &[b_origin, localhost]);
        }
        // No Origin at all: no CORS headers, still Vary.
        let plain = send(keyed(&app, Method::GET, "/api/v1/pastes", &a.key)).await;
        assert_eq!(plain.header("access-control-allow-origin"), None, "{db:?}");
        assert!(plain.varies_on_origin(), "{db:?}");
    }
}

// ---- C8 -------------------------------------------------------------------

#[tokio::test]
async fn one_id_in_two_tenants_never_mixes_and_reads_are_private() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({})).await;
        let b = tenant(&app, "b", json!({})).await;
        let id = create_v1_ok(&app, &a.key, "a-secret").await;

        let private = |reply: &Reply, what: &str| {
            assert_eq!(
                reply.header("cache-control"),
                Some("private, no-store"),
                "{db:?}: {what}"
            );
        };
        let not_cacheable = |reply: &Reply, what: &str| {
            let cc = reply.header("cache-control").unwrap_or("");
            assert!(
                !cc.contains("public") && !cc.contains("max-age"),
                "{db:?}: {what}: {cc}"
            );
        };

        // A reads (warming any cache), then B asks for the same id.
        for round in 0..3 {
            let a_v1 = send(keyed(
                &app,
                Method::GET,
                &format!("/api/v1/pastes/{id}"),
                &a.key,
            ))
            .await;
            assert_eq!(
                (a_v1.status, a_v1.json()["data"].as_str()),
                (200, Some("a-secret")),
                "{db:?}: round {round}"
            );
            private(&a_v1, "A's v1 read");
            let a_compat = send(at_host(
                &app,
                Method::GET,
                &format!("/api/paste/{id}"),
                &a.host,
            ))
            .await;
            assert_eq!(a_compat.status, 200, "{db:?}");
            private(&a_compat, "A's compat read");

            let b_v1 = send(keyed(
                &app,
                Method::GET,
                &format!("/api/v1/pastes/{id}"),
                &b.key,
            ))
            .await;
            assert_eq!(
                (b_v1.status, b_v1.json()["code"].as_str()),
                (404, Some("paste-not-found")),
                "{db:?}: B reads A's id"
            );
            not_cacheable(&b_v1, "B's 404");
            let b_compat = send(keyed(
                &app,
                Method::GET,
                &format!("/api/paste/{id}"),
                &b.key,
            ))
            .await;
            assert_eq!(b_compat.status, 404, "{db:?}");
            assert!(!b_compat.text.contains("a-secret"), "{db:?}");
            let b_host = send(at_host(
                &app,
                Method::GET,
                &format!("/api/paste/{id}"),
                &b.host,
            ))
            .await;
            assert_eq!(b_host.status, 404, "{db:?}");
            let default_host = app.get(&id).await;
            assert_eq!(default_host.status(), 404, "{db:?}: the default tenant");
        }

        // The same id really present in both namespaces (planted in B's
        // namespace of the shared store; the memory store is the server's own).
        if app.settings.store.kind == paste_store::StoreKind::Memory {
            continue;
        }
        let store = paste_store::open(&app.settings.store).await.unwrap();
        let now = paste_store::now_ms();
        store
            .put_if_absent(
                &paste_store::PasteKey::new(
                    paste_store::Namespace::parse(&b.namespace).unwrap(),
                    paste_store::PasteId::parse(&id).unwrap(),
                ),
                paste_store::StoredPaste {
                    payload: paste_store::Payload::from_text("b-secret".into()),
                    created_at: now,
                    expires_at: now + 3_600_000,
                    delete_token: None,
                    burn_after_read: false,
                },
            )
            .await
            .unwrap();
        for round in 0..3 {
            for (t, data) in [(&a, "a-secret"), (&b, "b-secret"), (&a, "a-secret")] {
                let v1 = send(keyed(
                    &app,
                    Method::GET,
                    &format!("/api/v1/pastes/{id}"),
                    &t.key,
                ))
                .await;
                assert_eq!(
                    (v1.status, v1.json()["data"].as_str()),
                    (200, Some(data)),
                    "{db:?}: round {round}: {} reads the shared id",
                    t.namespace
                );
                private(&v1, "v1 read");
                let compat = send(at_host(
                    &app,
                    Method::GET,
                    &format!("/api/paste/{id}"),
                    &t.host,
                ))
                .await;
                assert_eq!(
                    (compat.status, compat.json()["data"].as_str()),
                    (200, Some(data)),
                    "{db:?}: round {round}: {}'s host reads the shared id",
                    t.namespace
                );
                private(&compat, "compat read");
            }
        }
        // Deleting B's copy by B's key leaves A's.
        let deleted = send(keyed(
            &app,
            Method::DELETE,
            &format!("/api/v1/pastes/{id}"),
            &b.key,
        ))
        .await;
        assert_eq!(deleted.status, 204, "{db:?}");
        let a_read = send(keyed(
            &app,
            Method::GET,
            &format!("/api/v1/pastes/{id}"),
            &a.key,
        ))
        .await;
        assert_eq!(a_read.json()["data"].as_str(), Some("a-secret"), "{db:?}");
        let b_read = send(keyed(
            &app,
            Method::GET,
            &format!("/api/v1/pastes/{id}"),
            &b.key,
        ))
        .await;
        assert_eq!(b_read.status, 404, "{db:?}");
    }
}

// ---- C9 -------------------------------------------------------------------

/// 10 KiB of text that is not base64url, so it is stored (and accounted) as is.
fn ten_kib() -> String {
    ".".repeat(10_240)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_holds_under_a_concurrent_burst_and_spares_the_neighbour() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({"quota_bytes": 50 * 10_240})).await;
        let b = tenant(&app, "b", json!({"quota_bytes": 50 * 10_240})).await;
        let body = json!({"data": ten_kib()});

        let create = |key: &str| with_json(keyed(&app, Method::POST, "/api/v1/pastes", key), &body);
        let mut a_tasks = Vec::new();
        let mut b_tasks = Vec::new();
        for i in 0..100 {
            a_tasks.push(send_later(create(&a.key)));
            if i % 2 == 0 {
                b_tasks.push(send_later(create(&b.key)));
            }
        }
        let (mut a_created, mut a_refused) = (0, 0);
        for task in a_tasks {
            let reply = task.await.unwrap();
            match (reply.status, reply.json()["code"].as_str()) {
                (201, _) => a_created += 1,
                (413, Some("quota-exceeded")) => a_refused += 1,
                other => panic!("{db:?}: A's create answered {other:?}: {}", reply.text),
            }
        }
        assert_eq!((a_created, a_refused), (50, 50), "{db:?}: A's burst");
        for task in b_tasks {
            let reply = task.await.unwrap();
            assert_eq!(reply.status, 201, "{db:?}: B's create: {}", reply.text);
        }

        assert_eq!(
            usage(&app, db, &a).await,
            (50 * 10_240, 50),
            "{db:?}: A's usage"
        );
        assert_eq!(
            usage(&app, db, &b).await,
            (50 * 10_240, 50),
            "{db:?}: B's usage"
        );
        let a_ids = list_all(&app, db, &a.key, 1000).await;
        assert_eq!(a_ids.len(), 50, "{db:?}");
        let listed = send(keyed(&app, Method::GET, "/api/v1/pastes?limit=1", &a.key)).await;
        assert_eq!(
            listed.json()["pastes"][0]["bytes"],
            10_240,
            "{db:?}: text data is accounted byte for byte"
        );
        assert_eq!(list_all(&app, db, &b.key, 1000).await.len(), 50, "{db:?}");

        // Deleting one frees room for exactly one.
        let deleted = send(keyed(
            &app,
            Method::DELETE,
            &format!("/api/v1/pastes/{}", a_ids[0]),
            &a.key,
        ))
        .await;
        assert_eq!(deleted.status, 204, "{db:?}");
        assert_eq!(usage(&app, db, &a).await, (49 * 10_240, 49), "{db:?}");
        let next = send(create(&a.key)).await;
        assert_eq!(next.status, 201, "{db:?}: {}", next.text);
        let over = send(create(&a.key)).await;
        assert_eq!(
            (over.status, over.json()["code"].as_str()),
            (413, Some("quota-exceeded")),
            "{db:?}"
        );
        assert_eq!(usage(&app, db, &a).await, (50 * 10_240, 50), "{db:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paste_count_quota_holds_under_a_concurrent_burst() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({"quota_pastes": 5})).await;
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                send_later(with_json(
                    keyed(&app, Method::POST, "/api/v1/pastes", &a.key),
                    &json!({"data": format!("p{i}")}),
                ))
            })
            .collect();
        let mut statuses = Vec::new();
        for task in tasks {
            statuses.push(task.await.unwrap().status);
        }
        statuses.sort_unstable();
        let created = statuses.iter().filter(|s| **s == 201).count();
        let refused = statuses.iter().filter(|s| **s == 413).count();
        assert_eq!((created, refused), (5, 15), "{db:?}: {statuses:?}");
        assert_eq!(usage(&app, db, &a).await.1, 5, "{db:?}");
    }
}

// ---- Listing --------------------------------------------------------------

/// A page of the largest size (`limit=1000`) carries `next` whenever more
/// pastes follow. The index rows are written straight into the server's
/// catalog (listings read only the index), 1001 in one batch.
#[tokio::test]
async fn a_page_of_the_largest_size_still_has_a_next() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({})).await;
        let catalog = tenancy::Catalog::open(&app.settings.catalog).await.unwrap();
        let tenant_id = tenancy::TenantId::parse(&a.id).unwrap();
        let now = i64::try_from(paste_store::now_ms()).unwrap();
        let ids: Vec<String> = (0..1001).map(|i| format!("page{i:05}")).collect();
        let batch: Vec<_> = ids
            .iter()
            .map(|id| {
                let record = tenancy::PasteRecord {
                    id: id.clone(),
                    bytes: 1,
                    created_at: now,
                    expires_at: now + 3_600_000,
                    burn_after_read: false,
                };
                (tenant_id.clone(), record)
            })
            .collect();
        for recorded in catalog.record_pastes(&batch).await.unwrap() {
            assert!(recorded.unwrap(), "{db:?}");
        }
        catalog.close().await;

        let (first, next) = list_page(&app, db, &a.key, "?limit=1000").await;
        assert_eq!(first, ids[..1000], "{db:?}");
        assert_eq!(next.as_deref(), Some("page00999"), "{db:?}: 1001 pastes");
        let (rest, next) = list_page(&app, db, &a.key, "?limit=1000&after=page00999").await;
        assert_eq!((rest, next), (vec![ids[1000].clone()], None), "{db:?}");
        assert_eq!(list_all(&app, db, &a.key, 1000).await, ids, "{db:?}");
    }
}

// ---- Idempotency-Key ------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_keys_replay_refuse_other_bodies_and_are_per_tenant() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({})).await;
        let b = tenant(&app, "b", json!({})).await;
        let one = json!({"data": "one"});
        let create = |key: &str, idem: &str, body: &Value| {
            with_json(keyed(&app, Method::POST, "/api/v1/pastes", key), body)
                .header("idempotency-key", idem)
        };

        let first = send(create(&a.key, "order-1", &one)).await;
        assert_eq!(first.status, 201, "{db:?}: {}", first.text);
        assert_eq!(first.header("idempotent-replayed"), None, "{db:?}");
        let first = first.json();
        assert!(first["deleteToken"].is_string(), "{db:?}: {first}");
        let id = first["id"].as_str().unwrap().to_owned();

        let again = send(create(&a.key, "order-1", &one)).await;
        assert_eq!(again.status, 201, "{db:?}: {}", again.text);
        assert_eq!(again.header("idempotent-replayed"), Some("true"), "{db:?}");
        let again = again.json();
        assert_eq!(again["id"], id.as_str(), "{db:?}");
        assert_eq!(again.get("deleteToken"), None, "{db:?}: {again}");
        assert_eq!(again["expiresAt"], first["expiresAt"], "{db:?}");
        assert_eq!(
            list_all(&app, db, &a.key, 100).await,
            vec![id.clone()],
            "{db:?}"
        );

        let other = send(create(&a.key, "order-1", &json!({"data": "two"}))).await;
        assert_eq!(
            (other.status, other.json()["code"].as_str()),
            (422, Some("idempotency-key-reused")),
            "{db:?}"
        );
        assert_eq!(list_all(&app, db, &a.key, 100).await.len(), 1, "{db:?}");

        // Ten at once: one paste, every answer its id or "in progress".
        let ten = json!({"data": "ten"});
        let tasks: Vec<_> = (0..10)
            .map(|_| send_later(create(&a.key, "order-2", &ten)))
            .collect();
        let mut ids = BTreeSet::new();
        for task in tasks {
            let reply = task.await.unwrap();
            match reply.status {
                201 => {
                    ids.insert(reply.json()["id"].as_str().unwrap().to_owned());
                }
                409 => assert_eq!(
                    reply.json()["code"].as_str(),
                    Some("idempotency-in-progress"),
                    "{db:?}"
                ),
                other => panic!(
                    "{db:?}: concurrent idempotent create: {other}: {}",
                    reply.text
                ),
            }
        }
        assert_eq!(ids.len(), 1, "{db:?}: one id for one key: {ids:?}");
        let listed = list_all(&app, db, &a.key, 100).await;
        assert_eq!(listed.len(), 2, "{db:?}: {listed:?}");
        assert!(listed.iter().any(|l| ids.contains(l)), "{db:?}");
        // Once settled, a retry replays it.
        let settled = send(create(&a.key, "order-2", &ten)).await;
        assert_eq!(settled.status, 201, "{db:?}");
        assert!(
            ids.contains(settled.json()["id"].as_str().unwrap()),
            "{db:?}"
        );

        // B using A's key string gets a paste of its own.
        let b_first = send(create(&b.key, "order-1", &one)).await;
        assert_eq!(b_first.status, 201, "{db:?}: {}", b_first.text);
        assert_eq!(b_first.header("idempotent-replayed"), None, "{db:?}");
        let b_first = b_first.json();
        assert!(b_first["deleteToken"].is_string(), "{db:?}");
        let b_id = b_first["id"].as_str().unwrap().to_owned();
        assert_eq!(
            list_all(&app, db, &b.key, 100).await,
            vec![b_id.clone()],
            "{db:?}"
        );
        let b_again = send(create(&b.key, "order-1", &one)).await;
        assert_eq!(b_again.json()["id"], b_id.as_str(), "{db:?}");
        // …and A's record is untouched by B's.
        let a_again = send(create(&a.key, "order-1", &one)).await;
        assert_eq!(a_again.json()["id"], id.as_str(), "{db:?}");
        let b_other_body = send(create(&b.key, "order-2", &json!({"data": "b"}))).await;
        assert_eq!(b_other_body.status, 201, "{db:?}: A's order-2 is not B's");
        assert_eq!(list_all(&app, db, &a.key, 100).await.len(), 2, "{db:?}");
    }
}

/// An Idempotency-Key is the credential's own: a key holder's record is
/// neither replayed nor reported as used (in progress, or another body) to a
/// request without the key through the tenant's host, and the other way
/// round; each replays only its own.
#[tokio::test]
async fn idempotency_records_belong_to_the_credential_that_made_them() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({"allow_anonymous": true})).await;
        let body = json!({"data": "scoped"});
        let create = |key: Option<&str>, idem: &str, body: &Value| {
            let request = match key {
                Some(key) => keyed(&app, Method::POST, "/api/v1/pastes", key),
                None => at_host(&app, Method::POST, "/api/v1/pastes", &a.host),
            };
            with_json(request, body).header("idempotency-key", idem)
        };
        let fresh = |reply: &Reply, what: &str| -> String {
            assert_eq!(reply.status, 201, "{db:?}: {what}: {}", reply.text);
            assert_eq!(reply.header("idempotent-replayed"), None, "{db:?}: {what}");
            let json = reply.json();
            assert!(json["deleteToken"].is_string(), "{db:?}: {what}: {json}");
            json["id"].as_str().unwrap().to_owned()
        };
        let replayed = |reply: &Reply, what: &str| -> String {
            assert_eq!(reply.status, 201, "{db:?}: {what}: {}", reply.text);
            assert_eq!(
                reply.header("idempotent-replayed"),
                Some("true"),
                "{db:?}: {what}"
            );
            reply.json()["id"].as_str().unwrap().to_owned()
        };

        for (first, second) in [(Some(a.key.as_str()), None), (None, Some(a.key.as_str()))] {
            let idem = format!("order-{}", first.is_some());
            let one = fresh(&send(create(first, &idem, &body)).await, "first");
            let two = fresh(
                &send(create(second, &idem, &body)).await,
                "other credential",
            );
            assert_ne!(one, two, "{db:?}: another credential's paste id handed out");
            assert_eq!(
                replayed(&send(create(first, &idem, &body)).await, "retry"),
                one
            );
            assert_eq!(
                replayed(&send(create(second, &idem, &body)).await, "retry"),
                two
            );
        }
        // Another body under a key the key holder used: not "already used".
        fresh(
            &send(create(Some(&a.key), "order-x", &body)).await,
            "key holder",
        );
        let other = json!({"data": "probe"});
        fresh(
            &send(create(None, "order-x", &other)).await,
            "probe with another body",
        );
        // A second key of the tenant has records of its own too.
        let (_, second_key) = new_key(&app, &a.id).await;
        fresh(
            &send(create(Some(&second_key), "order-x", &body)).await,
            "second key",
        );
    }
}

/// A create that never finished (the server crashed between taking the
/// Idempotency-Key and recording the outcome) holds the key for its lease
/// only, four store timeouts (40 s here): a retry meanwhile gets 409 with a
/// `Retry-After` of what is left of the lease, and a retry after it creates
/// the paste. The crashed create's record is written straight into the
/// server's catalog, dated in the past.
#[tokio::test]
async fn a_crashed_idempotent_create_holds_its_key_as_long_as_retry_after_says() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({})).await;
        let catalog = tenancy::Catalog::open(&app.settings.catalog).await.unwrap();
        let tenant_id = tenancy::TenantId::parse(&a.id).unwrap();
        let key_id = tenancy::KeyId::parse(&a.key_id).unwrap();
        let lease_ms = 4_000 * i64::try_from(app.settings.http.store_timeout_secs).unwrap();
        assert_eq!(lease_ms, 40_000, "the default store timeout, 10 s");
        let body = json!({"data": "crashed"}).to_string();
        // The SHA-256 of the body, as the server keeps it.
        let digest = paste_store::DeleteTokenDigest::of(&body).0;
        let now = i64::try_from(paste_store::now_ms()).unwrap();
        let crashed = |idem: &'static str, at: i64| {
            let (catalog, tenant_id, key_id) = (&catalog, &tenant_id, &key_id);
            async move {
                let started = catalog
                    .begin_idempotent(tenant_id, Some(key_id), idem, &digest, at, lease_ms)
                    .await
                    .unwrap();
                assert_eq!(started, tenancy::Idempotency::Started);
            }
        };
        let retry = |idem: &str| {
            keyed(&app, Method::POST, "/api/v1/pastes", &a.key)
                .header("content-type", "application/json")
                .header("idempotency-key", idem)
                .body(body.clone())
        };

        // Crashed 12.5 s ago: 27.5 s of its lease are left.
        crashed("crashed-1", now - 12_500).await;
        let reply = send(retry("crashed-1")).await;
        assert_eq!(
            (reply.status, reply.json()["code"].as_str()),
            (409, Some("idempotency-in-progress")),
            "{db:?}"
        );
        let wait: i64 = reply.header("retry-after").unwrap().parse().unwrap();
        let left = (lease_ms - 12_500) / 1000; // 27 s and a half
        assert!(
            (left..=left + 1).contains(&wait),
            "{db:?}: Retry-After {wait}, {left} s and a half left of the lease"
        );

        // Crashed just over a lease ago: the retry takes the key over.
        crashed("crashed-2", now - lease_ms - 1).await;
        let reply = send(retry("crashed-2")).await;
        assert_eq!(reply.status, 201, "{db:?}: {}", reply.text);
        assert_eq!(reply.header("idempotent-replayed"), None, "{db:?}");
        let id = reply.json()["id"].as_str().unwrap().to_owned();
        let again = send(retry("crashed-2")).await;
        assert_eq!(again.header("idempotent-replayed"), Some("true"), "{db:?}");
        assert_eq!(again.json()["id"], id.as_str(), "{db:?}");
        catalog.close().await;
    }
}

/// A retry whose paste is gone (deleted, or burnt by its one read) creates a
/// new paste instead of handing back an id that answers 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_retry_after_the_paste_is_gone_creates_it_again() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({})).await;
        for body in [
            json!({"data": "plan"}),
            json!({"data": "burn", "burnAfterRead": true}),
        ] {
            let burn = body.get("burnAfterRead").is_some();
            let create = || {
                with_json(keyed(&app, Method::POST, "/api/v1/pastes", &a.key), &body).header(
                    "idempotency-key",
                    if burn { "retry-burnt" } else { "retry-deleted" },
                )
            };
            let first = send(create()).await;
            assert_eq!(first.status, 201, "{db:?}: {}", first.text);
            let id = first.json()["id"].as_str().unwrap().to_owned();
            let path = format!("/api/v1/pastes/{id}");
            if burn {
                assert_eq!(
                    send(keyed(&app, Method::GET, &path, &a.key)).await.status,
                    200
                );
            } else {
                assert_eq!(
                    send(keyed(&app, Method::DELETE, &path, &a.key))
                        .await
                        .status,
                    204
                );
            }
            assert_eq!(
                send(keyed(&app, Method::GET, &path, &a.key)).await.status,
                404
            );

            let retry = send(create()).await;
            assert_eq!(retry.status, 201, "{db:?}: {}", retry.text);
            assert_eq!(retry.header("idempotent-replayed"), None, "{db:?}");
            let retry = retry.json();
            let new_id = retry["id"].as_str().unwrap().to_owned();
            assert_ne!(new_id, id, "{db:?}");
            assert!(retry["deleteToken"].is_string(), "{db:?}: {retry}");
            // The new paste is the one replayed from now on.
            let replay = send(create()).await;
            assert_eq!(replay.header("idempotent-replayed"), Some("true"), "{db:?}");
            assert_eq!(replay.json()["id"], new_id.as_str(), "{db:?}");
            let read = send(keyed(
                &app,
                Method::GET,
                &format!("/api/v1/pastes/{new_id}"),
                &a.key,
            ))
            .await;
            assert_eq!(read.status, 200, "{db:?}");
            if burn {
                continue;
            }
            assert_eq!(
                list_all(&app, db, &a.key, 100).await,
                vec![new_id.clone()],
                "{db:?}"
            );
            let path = format!("/api/v1/pastes/{new_id}");
            assert_eq!(
                send(keyed(&app, Method::DELETE, &path, &a.key))
                    .await
                    .status,
                204
            );
        }
    }
}

// ---- burn after read ------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burn_after_read_paste_is_read_exactly_once_under_concurrency() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "a", json!({})).await;
        let created = Reply::of(
            create_v1(
                &app,
                &a.key,
                json!({"data": "read-me-once", "burnAfterRead": true}),
            )
            .await,
        )
        .await;
        assert_eq!(created.status, 201, "{db:?}: {}", created.text);
        assert_eq!(created.json()["burnAfterRead"], true, "{db:?}");
        let id = created.json()["id"].as_str().unwrap().to_owned();
        assert_eq!(
            list_all(&app, db, &a.key, 100).await,
            vec![id.clone()],
            "{db:?}"
        );

        let tasks: Vec<_> = (0..20)
            .map(|i| {
                send_later(if i % 2 == 0 {
                    keyed(&app, Method::GET, &format!("/api/v1/pastes/{id}"), &a.key)
                } else {
                    at_host(&app, Method::GET, &format!("/api/paste/{id}"), &a.host)
                })
            })
            .collect();
        let (mut read, mut gone) = (0, 0);
        for task in tasks {
            let reply = task.await.unwrap();
            match reply.status {
                200 => {
                    assert_eq!(reply.json()["data"], "read-me-once", "{db:?}");
                    read += 1;
                }
                404 => gone += 1,
                other => panic!("{db:?}: burn read answered {other}: {}", reply.text),
            }
        }
        assert_eq!((read, gone), (1, 19), "{db:?}");
        assert!(list_all(&app, db, &a.key, 100).await.is_empty(), "{db:?}");
        assert_eq!(
            usage(&app, db, &a).await,
            (0, 0),
            "{db:?}: quota given back"
        );
        let after = send(keyed(
            &app,
            Method::GET,
            &format!("/api/v1/pastes/{id}"),
            &a.key,
        ))
        .await;
        assert_eq!(after.status, 404, "{db:?}");
    }
}

// ---- revocation, deletion, disabling ---------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_keys_and_deleted_tenants_fail_at_once_here_and_within_the_cache_ttl_elsewhere() {
    let bound = paste_api::CACHE_TTL + Duration::from_millis(1_500);
    assert!(bound <= Duration::from_millis(2_500));
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let other = replica(&app).await;
        let a = tenant(&app, "a", json!({})).await;
        let (second_id, second) = new_key(&app, &a.id).await;
        let list = |server: &TestApp, key: &str| keyed(server, Method::GET, "/api/v1/pastes", key);

        for key in [&a.key, &second] {
            for server in [&*app, &other] {
                let reply = send(list(server, key)).await;
                assert_eq!(reply.status, 200, "{db:?}: {}", reply.text);
            }
        }

        // Same process: the revocation takes effect with the next request.
        let revoked = admin(
            &app,
            Method::DELETE,
            &format!("/admin/v1/tenants/{}/keys/{}", a.id, a.key_id),
            None,
        )
        .await;
        assert_eq!(revoked.status(), 204, "{db:?}");
        let reply = send(list(&app, &a.key)).await;
        assert_eq!(
            (reply.status, reply.json()["code"].as_str()),
            (401, Some("unauthorized")),
            "{db:?}: a revoked key"
        );
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"), "{db:?}");
        let create = send(with_json(
            keyed(&app, Method::POST, "/api/v1/pastes", &a.key),
            &json!({"data": "x"}),
        ))
        .await;
        assert_eq!(create.status, 401, "{db:?}");
        assert_eq!(
            send(list(&app, &second)).await.status,
            200,
            "{db:?}: the other key"
        );
        // The replica had the key cached: it follows within the cache TTL.
        let took = until_status(db, "revoked key on the replica", 401, bound, || {
            list(&other, &a.key)
        })
        .await;
        assert!(took <= bound, "{db:?}: {took:?}");

        // The second key, freshly cached on the replica, revoked through the first.
        assert_eq!(send(list(&other, &second)).await.status, 200, "{db:?}");
        let revoked = admin(
            &app,
            Method::DELETE,
            &format!("/admin/v1/tenants/{}/keys/{second_id}", a.id),
            None,
        )
        .await;
        assert_eq!(revoked.status(), 204, "{db:?}");
        let took = until_status(db, "second revoked key on the replica", 401, bound, || {
            list(&other, &second)
        })
        .await;
        assert!(took <= bound, "{db:?}: {took:?}");
        assert_eq!(send(list(&app, &second)).await.status, 401, "{db:?}");

        // A deleted tenant's keys fail too.
        let c = tenant(&app, "c", json!({})).await;
        for server in [&*app, &other] {
            assert_eq!(send(list(server, &c.key)).await.status, 200, "{db:?}");
        }
        let deleted = admin(
            &app,
            Method::DELETE,
            &format!("/admin/v1/tenants/{}", c.id),
            None,
        )
        .await;
        assert_eq!(deleted.status(), 204, "{db:?}");
        assert_eq!(
            send(list(&app, &c.key)).await.status,
            401,
            "{db:?}: deleted tenant"
        );
        let took = until_status(
            db,
            "deleted tenant's key on the replica",
            401,
            bound,
            || list(&other, &c.key),
        )
        .await;
        assert!(took <= bound, "{db:?}: {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_tenant_is_refused_by_key_and_by_host_until_enabled() {
    let bound = paste_api::CACHE_TTL + Duration::from_millis(1_500);
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let other = replica(&app).await;
        let a = tenant(&app, "a", json!({"allow_anonymous": true})).await;
        let b = tenant(&app, "b", json!({"allow_anonymous": true})).await;
        let a_paste = create_v1_ok(&app, &a.key, "a-data").await;
        let b_paste = create_v1_ok(&app, &b.key, "b-data").await;
        let read_by_key = |server: &TestApp, t: &Tenant, id: &str| {
            keyed(server, Method::GET, &format!("/api/v1/pastes/{id}"), &t.key)
        };
        let read_by_host = |server: &TestApp, t: &Tenant, id: &str| {
            at_host(server, Method::GET, &format!("/api/paste/{id}"), &t.host)
        };
        assert_eq!(
            send(read_by_key(&app, &a, &a_paste)).await.status,
            200,
            "{db:?}"
        );
        assert_eq!(
            send(read_by_host(&app, &a, &a_paste)).await.status,
            200,
            "{db:?}"
        );
        // The replica has a paste store of its own: it is probed with what
        // only the catalog decides (a keyed list, a host read of an absent id).
        let absent = absent_id(8);
        let list_on_replica = || keyed(&other, Method::GET, "/api/v1/pastes", &a.key);
        let host_on_replica = || read_by_host(&other, &a, &absent);
        assert_eq!(send(list_on_replica()).await.status, 200, "{db:?}");
        assert_eq!(send(host_on_replica()).await.status, 404, "{db:?}");

        let (status, body) = status_json(
            admin(
                &app,
                Method::POST,
                &format!("/admin/v1/tenants/{}/disable", a.id),
                None,
            )
            .await,
        )
        .await;
        assert_eq!(
            (status, body["status"].as_str()),
            (200, Some("disabled")),
            "{db:?}"
        );

        let by_key = send(read_by_key(&app, &a, &a_paste)).await;
        assert_eq!(by_key.status, 401, "{db:?}: disabled tenant's key");
        let create = send(with_json(
            keyed(&app, Method::POST, "/api/v1/pastes", &a.key),
            &json!({"data": "x"}),
        ))
        .await;
        assert_eq!(create.status, 401, "{db:?}");
        let by_host = send(read_by_host(&app, &a, &a_paste)).await;
        assert_eq!(
            (by_host.status, by_host.json()["code"].as_str()),
            (403, Some("tenant-disabled")),
            "{db:?}: disabled tenant's host"
        );
        let host_create = send(with_json(
            at_host(&app, Method::POST, "/api/paste", &a.host),
            &json!({"data": "x"}),
        ))
        .await;
        assert_eq!(host_create.status, 403, "{db:?}");
        // The neighbour is unaffected.
        assert_eq!(
            send(read_by_key(&app, &b, &b_paste)).await.status,
            200,
            "{db:?}"
        );
        assert_eq!(
            send(read_by_host(&app, &b, &b_paste)).await.status,
            200,
            "{db:?}"
        );
        // The replica follows within the cache TTL.
        until_status(
            db,
            "disabled key on the replica",
            401,
            bound,
            list_on_replica,
        )
        .await;
        until_status(
            db,
            "disabled host on the replica",
            403,
            bound,
            host_on_replica,
        )
        .await;

        let (status, body) = status_json(
            admin(
                &app,
                Method::POST,
                &format!("/admin/v1/tenants/{}/enable", a.id),
                None,
            )
            .await,
        )
        .await;
        assert_eq!(
            (status, body["status"].as_str()),
            (200, Some("active")),
            "{db:?}"
        );
        let by_key = send(read_by_key(&app, &a, &a_paste)).await;
        assert_eq!(
            (by_key.status, by_key.json()["data"].as_str()),
            (200, Some("a-data")),
            "{db:?}: enabled again"
        );
        assert_eq!(
            send(read_by_host(&app, &a, &a_paste)).await.status,
            200,
            "{db:?}"
        );
        assert_eq!(create_v1_ok(&app, &a.key, "again").await.len(), 8, "{db:?}");
        until_status(
            db,
            "enabled key on the replica",
            200,
            bound,
            list_on_replica,
        )
        .await;
        until_status(
            db,
            "enabled host on the replica",
            404,
            bound,
            host_on_replica,
        )
        .await;
    }
}

// ---- anonymous creates ----------------------------------------------------

#[tokio::test]
async fn anonymous_creates_need_a_tenant_that_allows_them_and_stay_in_it() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let shut = tenant(&app, "shut", json!({"allow_anonymous": false})).await;
        let open = tenant(&app, "open", json!({"allow_anonymous": true})).await;
        let b = tenant(&app, "b", json!({"allow_anonymous": true})).await;

        for path in ["/api/paste", "/api/v1/pastes"] {
            let reply = send(with_json(
                at_host(&app, Method::POST, path, &shut.host),
                &json!({"data": "anonymous"}),
            ))
            .await;
            assert_eq!(
                (reply.status, reply.json()["code"].as_str()),
                (401, Some("unauthorized")),
                "{db:?}: anonymous {path} on a closed tenant"
            );
        }
        assert!(
            list_all(&app, db, &shut.key, 100).await.is_empty(),
            "{db:?}"
        );

        let compat = send(with_json(
            at_host(&app, Method::POST, "/api/paste", &open.host),
            &json!({"data": "anon-compat"}),
        ))
        .await;
        assert_eq!(compat.status, 201, "{db:?}: {}", compat.text);
        let compat_id = compat.json()["id"].as_str().unwrap().to_owned();
        let v1 = send(with_json(
            at_host(&app, Method::POST, "/api/v1/pastes", &open.host),
            &json!({"data": "anon-v1"}),
        ))
        .await;
        assert_eq!(v1.status, 201, "{db:?}: {}", v1.text);
        let v1_id = v1.json()["id"].as_str().unwrap().to_owned();
        assert_eq!(
            set(&list_all(&app, db, &open.key, 100).await),
            set(&[compat_id.clone(), v1_id.clone()]),
            "{db:?}: anonymous pastes are the host's tenant's"
        );
        assert!(list_all(&app, db, &b.key, 100).await.is_empty(), "{db:?}");

        for (id, data) in [(&compat_id, "anon-compat"), (&v1_id, "anon-v1")] {
            let read = send(at_host(
                &app,
                Method::GET,
                &format!("/api/paste/{id}"),
                &open.host,
            ))
            .await;
            assert_eq!(
                (read.status, read.json()["data"].as_str()),
                (200, Some(data)),
                "{db:?}: readable through its host"
            );
            // Not through the default tenant (an unmapped host) nor B's host.
            let absent = absent_id(id.len());
            for host in [None, Some(b.host.as_str()), Some(shut.host.as_str())] {
                for prefix in ["/api/paste/", "/api/v1/pastes/"] {
                    let get = |id: &str| {
                        let r = app.client.get(app.url(&format!("{prefix}{id}")));
                        match host {
                            Some(h) => r.header("host", h),
                            None => r,
                        }
                    };
                    let real = send(get(id)).await;
                    let missing = send(get(&absent)).await;
                    assert_eq!(real.status, 404, "{db:?}: {prefix} at {host:?}");
                    assert_eq!(
                        real.comparable(),
                        missing.comparable(),
                        "{db:?}: {prefix} at {host:?}"
                    );
                }
            }
        }
    }
}

// ---- per-tenant TTL, size, id length ---------------------------------------

#[tokio::test]
async fn ttl_size_and_id_length_are_the_tenants_own() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let t = tenant(
            &app,
            "t",
            json!({
                "max_ttl_secs": 3600,
                "default_ttl_secs": 600,
                "max_paste_size": 1000,
                "id_length": 12,
                "allow_anonymous": true,
            }),
        )
        .await;
        let u = tenant(&app, "u", json!({})).await; // the catalog's defaults

        for ttl in [
            json!(0),
            json!(3601),
            json!(-1),
            json!(1.5),
            json!("60"),
            json!(u64::MAX),
        ] {
            let reply =
                Reply::of(create_v1(&app, &t.key, json!({"data": "x", "ttl": ttl})).await).await;
            assert_eq!(
                (reply.status, reply.json()["code"].as_str()),
                (422, Some("invalid-field")),
                "{db:?}: ttl {ttl}"
            );
        }
        assert!(list_all(&app, db, &t.key, 100).await.is_empty(), "{db:?}");

        let mut ids = Vec::new();
        for (ttl, secs) in [(Some(1), 1), (Some(3600), 3600), (None, 600)] {
            let mut body = json!({"data": "ttl"});
            if let Some(ttl) = ttl {
                body["ttl"] = json!(ttl);
            }
            let now = paste_store::now_ms();
            let reply = Reply::of(create_v1(&app, &t.key, body).await).await;
            assert_eq!(reply.status, 201, "{db:?}: ttl {ttl:?}: {}", reply.text);
            let created = reply.json();
            let expected = now + secs * 1000;
            let expires = created["expiresAt"].as_u64().unwrap();
            assert!(
                expires.abs_diff(expected) <= 5_000,
                "{db:?}: ttl {ttl:?}: expiresAt {expires}, expected about {expected}"
            );
            ids.push(created["id"].as_str().unwrap().to_owned());
        }
        // Another tenant's longer limit is its own.
        let reply =
            Reply::of(create_v1(&app, &u.key, json!({"data": "x", "ttl": 3601})).await).await;
        assert_eq!(reply.status, 201, "{db:?}: {}", reply.text);
        assert_eq!(reply.json()["id"].as_str().unwrap().len(), 8, "{db:?}");

        // Size: at the limit is fine, one over is not (both routes).
        let at = ".".repeat(1000);
        let over = ".".repeat(1001);
        let reply = Reply::of(create_v1(&app, &t.key, json!({"data": over})).await).await;
        assert_eq!(reply.status, 413, "{db:?}: {}", reply.text);
        assert_eq!(
            reply.json()["code"],
            "payload-too-large",
            "{db:?}: new routes carry a code"
        );
        let reply = send(with_json(
            at_host(&app, Method::POST, "/api/paste", &t.host),
            &json!({"data": over}),
        ))
        .await;
        assert_eq!(reply.status, 413, "{db:?}: {}", reply.text);
        let reply = Reply::of(create_v1(&app, &t.key, json!({"data": at})).await).await;
        assert_eq!(reply.status, 201, "{db:?}: {}", reply.text);
        ids.push(reply.json()["id"].as_str().unwrap().to_owned());
        let reply = send(with_json(
            at_host(&app, Method::POST, "/api/paste", &t.host),
            &json!({"data": at}),
        ))
        .await;
        assert_eq!(reply.status, 201, "{db:?}: {}", reply.text);
        ids.push(reply.json()["id"].as_str().unwrap().to_owned());
        // The other tenant takes more.
        create_v1_ok(&app, &u.key, &over).await;

        for id in &ids {
            assert_eq!(id.len(), 12, "{db:?}: {id}");
            assert!(
                id.bytes().all(|b| b.is_ascii_alphanumeric()),
                "{db:?}: {id}"
            );
        }
        assert_eq!(
            set(&list_all(&app, db, &t.key, 100).await),
            set(&ids),
            "{db:?}"
        );
    }
}

/// Usage counts a tenant's paste requests (keyed and by host), and not
/// another tenant's; this process's counts are current when usage is read.
#[tokio::test]
async fn usage_counts_each_tenants_own_requests() {
    for db in databases().await {
        let app = spawn(db, &[], |_| {}).await;
        let a = tenant(&app, "count-a", json!({})).await;
        let b = tenant(&app, "count-b", json!({})).await;
        for _ in 0..4 {
            let listed = send(keyed(&app, Method::GET, "/api/v1/pastes", &a.key)).await;
            assert_eq!(listed.status, 200, "{db:?}");
        }
        for _ in 0..3 {
            let absent = send(at_host(
                &app,
                Method::GET,
                &format!("/api/paste/{}", absent_id(16)),
                &a.host,
            ))
            .await;
            assert_eq!(absent.status, 404, "{db:?}");
        }
        let created = send(keyed(&app, Method::GET, "/api/v1/pastes", &b.key)).await;
        assert_eq!(created.status, 200, "{db:?}");
        let usage_of = |t: &Tenant| {
            let path = format!("/admin/v1/tenants/{}/usage", t.id);
            let app = &app;
            async move { status_json(admin(app, Method::GET, &path, None).await).await }
        };
        let (status, usage) = usage_of(&a).await;
        assert_eq!(status, 200, "{db:?}: {usage}");
        assert_eq!(usage["requests"], 7, "{db:?}: {usage}");
        let (_, usage) = usage_of(&b).await;
        assert_eq!(usage["requests"], 1, "{db:?}: {usage}");
    }
}

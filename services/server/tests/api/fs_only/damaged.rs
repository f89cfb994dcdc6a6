//! A paste file that is damaged (cut short, emptied, its header garbled,
//! replaced by something else) answers `410 paste-damaged` on every read
//! route — not `500`, and not `404` as if it were absent — and can be
//! deleted: with an API key of its tenant always, with its delete token
//! while the header that holds the token's digest is intact.

use std::path::PathBuf;

use reqwest::Method;
use serde_json::{Value, json};

use crate::tenants_support::{Db, Tenant, create_v1, keyed, spawn, status_json, tenant};

/// The file of paste `id` in `namespace` (`<root>/<ns>/<shard>/<hex id>`).
fn file_of(app: &testkit::TestApp, namespace: &str, id: &str) -> PathBuf {
    let hex: String = id.bytes().map(|b| format!("{b:02x}")).collect();
    app.store_dir().join(namespace).join(&hex[..4]).join(hex)
}

type Damage = fn(&[u8]) -> Vec<u8>;

/// How a file is damaged, and whether the header (with the delete token's
/// digest) survives it.
const DAMAGES: [(&str, Damage, bool); 5] = [
    ("truncated", |b| b[..b.len() - 1].to_vec(), true),
    ("empty", |_| Vec::new(), false),
    ("not a record", |_| b"{\"data\":\"x\"}".to_vec(), false),
    (
        // The burn-after-read flag set: read as is, it would be a burn
        // that no one can claim (404).
        "garbled flags",
        |b| {
            let mut b = b.to_vec();
            b[4] |= 4;
            b
        },
        false,
    ),
    (
        // The expiry zeroed: read as is, it would be long expired (404).
        "garbled expiry",
        |b| {
            let mut b = b.to_vec();
            b[16..24].fill(0);
            b
        },
        false,
    ),
];

async fn damaged_paste(app: &testkit::TestApp, t: &Tenant, damage: Damage) -> (String, String) {
    let (status, body) = status_json(create_v1(app, &t.key, json!({"data": "plan"})).await).await;
    assert_eq!(status, 201, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let token = body["deleteToken"].as_str().unwrap().to_owned();
    let file = file_of(app, &t.namespace, &id);
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, damage(&bytes)).unwrap();
    (id, token)
}

fn assert_damaged(what: &str, route: &str, (status, body): (u16, Value)) {
    assert_eq!(
        (status, body["code"].as_str()),
        (410, Some("paste-damaged")),
        "{what}: {route}: {body}"
    );
    assert!(body["error"].is_string(), "{what}: {route}: {body}");
}

#[tokio::test]
async fn a_damaged_paste_answers_410_on_reads_and_can_be_deleted() {
    let app = spawn(Db::Sqlite, &[], |_| {}).await;
    let t = tenant(&app, "dmg", json!({})).await;
    let wrong = paste_store::DeleteToken::generate()
        .unwrap()
        .expose()
        .to_owned();
    for (what, damage, header_holds) in DAMAGES {
        let (id, token) = damaged_paste(&app, &t, damage).await;
        let v1 = format!("/api/v1/pastes/{id}");
        let compat = format!("/api/paste/{id}");
        for route in [&v1, &compat] {
            let reply = keyed(&app, Method::GET, route, &t.key)
                .send()
                .await
                .unwrap();
            assert_damaged(what, route, status_json(reply).await);
            // Without a key, through the tenant's host.
            let reply = app
                .client
                .get(app.url(route))
                .header("host", &t.host)
                .send()
                .await
                .unwrap();
            assert_damaged(what, route, status_json(reply).await);
        }

        let by_token = |token: &str| {
            app.client
                .delete(app.url(&v1))
                .header("host", &t.host)
                .bearer_auth(token)
                .send()
        };
        let (status, body) = status_json(by_token(&wrong).await.unwrap()).await;
        if header_holds {
            // The digest is readable: a wrong token is refused as usual.
            assert_eq!(status, 404, "{what}: wrong token: {body}");
            let (status, body) = status_json(by_token(&token).await.unwrap()).await;
            assert_eq!(status, 204, "{what}: delete token: {body}");
        } else {
            // Nothing to check a token against: the answer says so.
            assert_damaged(what, "DELETE with a wrong token", (status, body));
            let (status, body) = status_json(by_token(&token).await.unwrap()).await;
            assert_damaged(what, "DELETE with the token", (status, body));
            let reply = keyed(&app, Method::DELETE, &v1, &t.key)
                .send()
                .await
                .unwrap();
            let (status, body) = status_json(reply).await;
            assert_eq!(status, 204, "{what}: delete with the key: {body}");
        }
        assert!(!file_of(&app, &t.namespace, &id).exists(), "{what}");
        let reply = keyed(&app, Method::GET, &v1, &t.key).send().await.unwrap();
        assert_eq!(reply.status(), 404, "{what}: after the delete");
        // Its index entry went with it.
        let (_, list) = status_json(
            keyed(&app, Method::GET, "/api/v1/pastes", &t.key)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(list["pastes"], json!([]), "{what}: {list}");
    }
}

/// The compat routes on the default tenant: a damaged paste is 410 to the
/// upstream read, and its delete token deletes it while the header holds.
#[tokio::test]
async fn a_damaged_upstream_paste_answers_410_and_its_token_deletes_it() {
    let app = testkit::TestApp::spawn(&[]).await;
    let created = app.create_ok("q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg").await;
    let id = created["id"].as_str().unwrap();
    let token = created["deleteToken"].as_str().unwrap();
    let file = file_of(&app, "default", id);
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..70]).unwrap();
    let (status, body) = status_json(app.get(id).await).await;
    assert_damaged("truncated", "GET /api/paste", (status, body));
    let deleted = app
        .client
        .delete(app.url(&format!("/api/paste/{id}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(app.get(id).await.status(), 404);
}

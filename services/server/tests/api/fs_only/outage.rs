//! A store that cannot do its I/O answers 503 + Retry-After, never 404 or
//! 500, reports not ready, and recovers by itself.

use std::time::Duration;

use testkit::TestApp;

#[tokio::test]
async fn a_broken_data_directory_gives_503_and_recovers_without_restart() {
    let app = TestApp::spawn(&[]).await;
    let created = app.create_ok("survivor").await;
    let id = created["id"].as_str().unwrap().to_owned();
    let token = created["deleteToken"].as_str().unwrap().to_owned();
    assert_eq!(app.get_path("/readyz").await.status(), 200);

    // Tests run as root, so permission bits do not stop I/O; replace the
    // directory by a plain file instead.
    let dir = app.store_dir();
    let moved = dir.with_extension("moved");
    std::fs::rename(&dir, &moved).unwrap();
    std::fs::write(&dir, b"not a directory").unwrap();

    let responses = [
        app.get(&id).await,
        app.get("abcdefghABCDEFGH").await,
        app.create("new paste").await,
        app.client
            .delete(app.url(&format!("/api/paste/{id}")))
            .header("authorization", format!("Bearer {token}"))
            .send()
            .await
            .unwrap(),
    ];
    for response in responses {
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()["retry-after"], "1");
        let body = response.text().await.unwrap();
        assert!(body.contains(r#""code":"store-unavailable""#), "{body}");
        assert!(
            !body.contains("/tmp") && !body.contains("directory"),
            "no internals: {body}"
        );
    }
    // Readiness caches its check for a second.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let ready = app.get_path("/readyz").await;
    assert_eq!(ready.status(), 503);
    assert_eq!(ready.headers()["retry-after"], "1");
    // Liveness does not depend on the store.
    assert_eq!(app.get_path("/healthz").await.status(), 200);

    std::fs::remove_file(&dir).unwrap();
    std::fs::rename(&moved, &dir).unwrap();
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(app.get_path("/readyz").await.status(), 200);
    let body: serde_json::Value = app.get(&id).await.json().await.unwrap();
    assert_eq!(body["data"], "survivor");
    app.create_ok("after recovery").await;
}

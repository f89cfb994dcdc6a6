//! The server and its tenant catalog: the default SQLite file under the data
//! directory, start-up while the catalog's database is down (the server
//! starts, is alive but not ready, and serves what needs no catalog),
//! and a configuration the catalog refuses.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use testkit::TestApp;

#[tokio::test]
async fn the_default_catalog_is_a_sqlite_file_in_the_data_directory() {
    let app = TestApp::spawn(&[]).await;
    assert_eq!(app.get_path("/readyz").await.status(), 200);
    let file = app.settings.server.data_dir.join("catalog.sqlite");
    assert!(file.exists(), "{} missing", file.display());
}

#[tokio::test]
async fn the_server_starts_with_the_catalog_database_down_and_says_not_ready() {
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/planshare",
        testkit::free_port()
    );
    let app = TestApp::spawn_configured(&[], |s| {
        s.catalog.url = url;
        s.catalog.connect_timeout_ms = 300;
        s.catalog.acquire_timeout_ms = 300;
    })
    .await;
    assert_eq!(
        app.get_path("/healthz").await.status(),
        200,
        "liveness does not depend on it"
    );
    let started = std::time::Instant::now();
    let ready = app.get_path("/readyz").await;
    assert_eq!(ready.status(), 503);
    assert!(ready.headers().contains_key("retry-after"));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the probe answers fast: {:?}",
        started.elapsed()
    );
    // Pastes do not need the catalog yet.
    app.create_ok("still serving").await;
}

#[tokio::test]
async fn a_setting_the_catalog_refuses_stops_start_up_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let settings = testkit::settings_from_env(
        dir.path(),
        &[(
            "PASTE_ALLOWED_ORIGINS",
            "https://plans.example.com/with/a/path",
        )],
    );
    let error = match planshare_server::Server::build(&settings).await {
        Ok(_) => panic!("start-up accepted an origin with a path"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        error.contains("tenant catalog") && error.contains("CORS origin"),
        "{error}"
    );
}

//! Start-up as a new user would try it: the binary on a fresh `HOME`, with
//! upstream's `PASTE_DATA_DIR` or planshare's `PLANSHARE_DATA_DIR` naming a
//! directory that does not exist yet. The tenant catalog must open at once
//! (it lives in the data directory those name) and the admin API answer.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use testkit::{ChildServer, wait_ready};

const ADMIN_TOKEN: &str = "fresh-home-admin-token-0123456789";

/// Starts the server with `HOME` at `home` and `vars`; waits for it.
async fn start(home: &Path, vars: &[(&str, &Path)]) -> (ChildServer, String) {
    let port = testkit::free_port();
    let mut command = Command::new(env!("CARGO_BIN_EXE_planshare-server"));
    command
        .env_clear()
        .env("HOME", home)
        .env("PLANSHARE_HOST", "127.0.0.1")
        .env("PLANSHARE_PORT", port.to_string())
        .env("PLANSHARE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("PLANSHARE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in vars {
        command.env(name, value);
    }
    let process = ChildServer::spawn(&mut command);
    let base = format!("http://127.0.0.1:{port}");
    assert!(
        wait_ready(&base, Duration::from_secs(20)).await,
        "not ready with {vars:?}"
    );
    (process, base)
}

#[tokio::test]
async fn each_data_directory_variable_works_on_a_fresh_home() {
    let client = reqwest::Client::new();
    for var in ["PASTE_DATA_DIR", "PLANSHARE_DATA_DIR"] {
        let home = tempfile::tempdir().unwrap();
        let data = home.path().join("srv/planshare-data");
        let (mut process, base) = start(&home.path().join("home"), &[(var, &data)]).await;
        let created = client
            .post(format!("{base}/admin/v1/tenants"))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(r#"{"name":"Team","namespace":"team"}"#)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201, "{var}: {:?}", created.text().await);
        assert!(
            data.join("catalog.sqlite").is_file(),
            "{var}: the catalog is not in the data directory"
        );
        let paste = client
            .post(format!("{base}/api/paste"))
            .body(r#"{"data":"fresh"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(paste.status(), 201, "{var}");
        assert!(process.terminate(Duration::from_secs(20)).await, "{var}");
    }
}

//! `planshare-server backup` under write load: every paste acknowledged
//! before the backup started is in the copy, the copy serves as a data
//! directory as it is, and `doctor` finds it healthy.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use planshare_server::doctor::{DoctorOptions, run as doctor};
use testkit::{TestApp, settings_from_env};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_write_load_holds_every_paste_acknowledged_before_it() {
    let fs = [("PLANSHARE_STORE", "fs")];
    let app = TestApp::spawn(&fs).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (client, base, stop) = (app.client.clone(), app.base_url.clone(), stop.clone());
        tokio::spawn(async move {
            let mut acknowledged: Vec<(String, String, Instant)> = Vec::new();
            let mut n = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let data = format!(
                    "paste {n} {}",
                    "x".repeat(usize::try_from(n % 97).unwrap() * 40)
                );
                // Plain (upstream) creates and indexed ones, with their quota.
                let path = if n.is_multiple_of(2) {
                    "/api/v1/pastes"
                } else {
                    "/api/paste"
                };
                let response = client
                    .post(format!("{base}{path}"))
                    .header("content-type", "application/json")
                    .body(serde_json::json!({ "data": data }).to_string())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 201);
                let body: serde_json::Value = response.json().await.unwrap();
                acknowledged.push((
                    body["id"].as_str().unwrap().to_owned(),
                    data,
                    Instant::now(),
                ));
            }
            acknowledged
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let backup_dir = tempfile::tempdir().unwrap();
    let dest = backup_dir.path().join("copy");
    let started = Instant::now();
    let report = planshare_server::backup::run(&app.settings, &dest)
        .await
        .unwrap();
    // Writes go on a little after the copy, too.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acknowledged = load.await.unwrap();
    let before: Vec<_> = acknowledged
        .iter()
        .filter(|(_, _, at)| *at < started)
        .collect();
    assert!(
        before.len() > 50,
        "only {} pastes before the backup",
        before.len()
    );
    assert!(
        acknowledged.len() > before.len(),
        "no writes during the backup"
    );
    assert!(report.files >= before.len() as u64);

    // A second backup into the same place is refused: nothing is overwritten.
    let again = planshare_server::backup::run(&app.settings, &dest).await;
    assert!(again.unwrap_err().to_string().contains("not empty"));

    // Restored: a server over the copy serves every paste acknowledged
    // before the backup started.
    let restored = TestApp::spawn_with(settings_from_env(&dest, &fs)).await;
    for (id, data, _) in &before {
        let response = restored
            .client
            .get(restored.url(&format!("/api/paste/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{id} is missing from the backup");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["data"], data.as_str());
    }
    let checked = doctor(
        &restored.settings,
        &DoctorOptions {
            repair: false,
            tenant: None,
            min_age: Duration::from_secs(0),
            progress: false,
        },
    )
    .await
    .unwrap();
    assert!(checked.findings.is_empty(), "{}", checked.to_text());
    assert_eq!(checked.checked.entries, report.files);
}

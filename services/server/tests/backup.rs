//! `planshare-server backup` under write load: every paste acknowledged
//! before the backup started is in the copy, the copy serves as a data
//! directory as it is, and `doctor` finds it healthy.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use planshare_server::doctor::{DoctorOptions, run as doctor};
use testkit::tree::snapshot;
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

/// `backup` copies through no symbolic link: a shard directory, a paste
/// file, a review blob or a namespace directory that is a link to
/// something outside the data directory is skipped and named in what the
/// command prints (exit status 1: the copy lacks whatever they point to);
/// the copy holds the store's own pastes and nothing of the outside; the
/// outside is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_copies_through_no_symlink() {
    use paste_store::{FsStore, Namespace, PasteId, PasteKey, PasteStore as _};
    use std::os::unix::fs::symlink;

    let data = tempfile::tempdir().unwrap();
    let settings = settings_from_env(data.path(), &[("PLANSHARE_STORE", "fs")]);
    let catalog = tenancy::Catalog::open(&settings.catalog).await.unwrap();
    catalog.close().await;
    let fs = |root: &std::path::Path| paste_store::FsConfig {
        path: root.to_path_buf(),
        first_sweep_delay_secs: 3600,
        ..settings.store.fs.clone()
    };
    let key = |ns: &str, id: &str| {
        PasteKey::new(Namespace::parse(ns).unwrap(), PasteId::parse(id).unwrap())
    };
    let store = FsStore::open(&fs(&settings.store.fs.path)).await.unwrap();
    let own = key("default", "Inside001");
    store
        .put_if_absent(&own, paste_store::conformance::paste("inside", 3_600_000))
        .await
        .unwrap();
    let shard = store.path_of(&own).parent().unwrap().to_path_buf();

    let outside = tempfile::tempdir().unwrap();
    let elsewhere = FsStore::open(&fs(&outside.path().join("store")))
        .await
        .unwrap();
    for (ns, id) in [("default", "Outside01"), ("team-b", "Outside02")] {
        elsewhere
            .put_if_absent(
                &key(ns, id),
                paste_store::conformance::paste("outside", 3_600_000),
            )
            .await
            .unwrap();
    }
    let outside_shard = elsewhere
        .path_of(&key("default", "Outside01"))
        .parent()
        .unwrap()
        .to_path_buf();
    let outside_file = elsewhere.path_of(&key("default", "Outside01"));
    let hex = |s: &str| -> String { s.bytes().map(|b| format!("{b:02x}")).collect() };
    let links = [
        (
            outside_shard.clone(),
            settings.store.fs.path.join("default").join(&hex("Ou")[..4]),
        ),
        (outside_file.clone(), shard.join(hex("InLink001"))),
        (
            outside_file.clone(),
            shard.join(format!("r{}", hex("InBlob001"))),
        ),
        (
            outside.path().join("store/team-b"),
            settings.store.fs.path.join("team-b"),
        ),
    ];
    for (target, link) in &links {
        symlink(target, link).unwrap();
    }
    let before = snapshot(outside.path());

    let dest = tempfile::tempdir().unwrap();
    let copy = dest.path().join("copy");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_planshare-server"))
        .arg("backup")
        .arg(&copy)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PLANSHARE_DATA_DIR", data.path())
        .env("PLANSHARE_STORE", "fs")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    for (_, link) in &links {
        assert!(
            stdout.contains(&link.display().to_string()),
            "{} not named: {stdout}",
            link.display()
        );
    }
    assert!(stdout.contains("1 paste files"), "{stdout}");
    assert!(stdout.contains("symbolic link"), "{stdout}");

    // The copy: the store's own paste, nothing of the outside, no links.
    let rel = |p: &std::path::Path| {
        p.strip_prefix(&settings.store.fs.path)
            .unwrap()
            .to_path_buf()
    };
    let copied: Vec<_> = snapshot(&copy)
        .into_iter()
        .filter(|(_, kind, _, _)| *kind != "dir")
        .map(|(path, kind, bytes, _)| (path, kind, bytes))
        .collect();
    let pastes_copy = copy.join("pastes");
    let own_copy = pastes_copy.join(rel(&store.path_of(&own)));
    assert!(
        copied
            .iter()
            .any(|(path, kind, _)| path == &own_copy && *kind == "file"),
        "{copied:?}"
    );
    let outside_bytes = std::fs::read(&outside_file).unwrap();
    for (path, kind, bytes) in &copied {
        assert_ne!(*kind, "link", "{}", path.display());
        assert!(
            bytes != &outside_bytes && !path.starts_with(pastes_copy.join("team-b")),
            "copied from outside: {}",
            path.display()
        );
    }
    assert_eq!(snapshot(outside.path()), before);
}

//! `planshare-server doctor` over the self-hosted default (fs store, SQLite
//! catalog): damage of each kind injected into real files and rows is found
//! and named, `--repair` fixes what it claims, a second run changes nothing,
//! and an acknowledged paste is never removed by a repair.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use paste_store::{
    FsStore, Namespace, PasteId, PasteKey, PasteStore as _, Payload, StoredPaste, now_ms,
};
use planshare_server::Settings;
use planshare_server::doctor::{DoctorOptions, FindingKind, Report, run};
use tenancy::{Catalog, NewTenant, PasteRecord, TenantId, TenantSettings};
use testkit::TestApp;
use testkit::tree::snapshot;

const HOUR_MS: u64 = 3_600_000;

struct Fixture {
    _dir: tempfile::TempDir,
    data: PathBuf,
    settings: Settings,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    let data_str = data.display().to_string();
    let settings = Settings::load(None, &|name| {
        (name == "PASTE_DATA_DIR").then(|| data_str.clone())
    })
    .unwrap();
    Fixture {
        _dir: dir,
        data,
        settings,
    }
}

async fn doctor(settings: &Settings, repair: bool) -> Report {
    // The settle time is what lets a create's two writes meet; these
    // entries are made "old" by their timestamps instead of by waiting.
    run(
        settings,
        &DoctorOptions {
            repair,
            tenant: None,
            min_age: Duration::from_secs(60),
            progress: false,
        },
    )
    .await
    .unwrap()
}

fn paste(created_at: u64, text: &str) -> StoredPaste {
    StoredPaste {
        payload: Payload::Base64Url(text.as_bytes().to_vec().into()),
        created_at,
        expires_at: created_at + 7 * 24 * HOUR_MS,
        delete_token: None,
        burn_after_read: false,
    }
}

fn record(id: &str, p: &StoredPaste) -> PasteRecord {
    PasteRecord {
        id: id.into(),
        bytes: i64::try_from(p.payload.stored_len()).unwrap(),
        created_at: i64::try_from(p.created_at).unwrap(),
        expires_at: i64::try_from(p.expires_at).unwrap(),
        burn_after_read: false,
    }
}

fn codes(report: &Report) -> Vec<(FindingKind, Option<String>)> {
    let mut out: Vec<_> = report
        .findings
        .iter()
        .map(|f| (f.code, f.id.clone()))
        .collect();
    out.sort_by_key(|(code, id)| (format!("{code:?}"), id.clone()));
    out
}

/// Stores `id` in `ns` (file and, when `indexed`, row) and returns its path.
async fn put(
    store: &FsStore,
    catalog: &Catalog,
    tenant: &TenantId,
    ns: &Namespace,
    id: &str,
    p: &StoredPaste,
    indexed: bool,
) -> PathBuf {
    let key = PasteKey::new(ns.clone(), PasteId::parse(id).unwrap());
    store.put_if_absent(&key, p.clone()).await.unwrap();
    if indexed {
        assert!(catalog.record_paste(tenant, &record(id, p)).await.unwrap());
    }
    store.path_of(&key)
}

async fn new_tenant(catalog: &Catalog, name: &str, namespace: &str) -> tenancy::Tenant {
    catalog
        .create_tenant(&NewTenant {
            name: name.into(),
            namespace: namespace.into(),
            settings: TenantSettings::default(),
        })
        .await
        .unwrap()
}

fn rewrite(path: &Path, change: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    change(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_damage_is_found_named_and_repaired_once() {
    let fx = fixture();
    let catalog = Catalog::open(&fx.settings.catalog).await.unwrap();
    let tenant = new_tenant(&catalog, "Team A", "team-a").await;
    let ns = Namespace::parse("team-a").unwrap();
    let store = FsStore::open(&fx.settings.store.fs).await.unwrap();
    let old = now_ms() - 2 * HOUR_MS;
    let t = &tenant.id;

    let healthy = paste(old, "a healthy paste");
    let healthy_path = put(&store, &catalog, t, &ns, "Healthy01", &healthy, true).await;
    let truncated = put(
        &store,
        &catalog,
        t,
        &ns,
        "Truncat01",
        &paste(old, "will be cut short"),
        true,
    )
    .await;
    rewrite(&truncated, |b| b.truncate(b.len() - 3));
    let flipped = put(
        &store,
        &catalog,
        t,
        &ns,
        "Flipped01",
        &paste(old, "header byte flipped"),
        true,
    )
    .await;
    rewrite(&flipped, |b| b[17] ^= 0x40);
    let longer = put(
        &store,
        &catalog,
        t,
        &ns,
        "Longer001",
        &paste(old, "one byte too many"),
        true,
    )
    .await;
    rewrite(&longer, |b| b.push(b'!'));
    let future = put(
        &store,
        &catalog,
        t,
        &ns,
        "Future001",
        &paste(old, "a later format"),
        true,
    )
    .await;
    rewrite(&future, |b| b[3] = b'2');
    // A file without its row, and a row without its file.
    put(
        &store,
        &catalog,
        t,
        &ns,
        "NoRow0001",
        &paste(old, "never accounted"),
        false,
    )
    .await;
    let lost = paste(old, "the file is gone");
    let lost_bytes = lost.payload.stored_len();
    let lost_path = put(&store, &catalog, t, &ns, "NoFile001", &lost, true).await;
    std::fs::remove_file(&lost_path).unwrap();
    // A temporary file of a put that died two hours ago, and one of now.
    let shard = healthy_path.parent().unwrap();
    let stale_tmp = shard.join(format!(".tmp-{}-{old}-00000000000000aa", "6869"));
    std::fs::write(&stale_tmp, b"half a paste").unwrap();
    let fresh_tmp = shard.join(format!(".tmp-{}-{}-00000000000000bb", "6869", now_ms()));
    std::fs::write(&fresh_tmp, b"a put in flight").unwrap();
    // Usage off by 5 bytes and one entry.
    assert!(catalog.reserve(t, 5).await.unwrap());
    // A namespace directory of no tenant.
    std::fs::create_dir_all(fx.data.join("ghost/6162")).unwrap();

    let before = doctor(&fx.settings, false).await;
    let text = before.to_text();
    let id = |s: &str| Some(s.to_owned());
    assert_eq!(
        codes(&before),
        vec![
            (FindingKind::BlobWithoutRow, id("NoRow0001")),
            (FindingKind::DamagedRecord, id("Flipped01")),
            (FindingKind::DamagedRecord, id("Longer001")),
            (FindingKind::DamagedRecord, id("Truncat01")),
            (FindingKind::RowWithoutBlob, id("NoFile001")),
            (FindingKind::StaleTemporary, None),
            (FindingKind::UnknownFormat, id("Future001")),
            (FindingKind::UnknownNamespace, None),
            (FindingKind::UsageMismatch, None),
        ],
        "{text}"
    );
    assert_eq!(before.exit_code(), 1);
    assert_eq!(before.repaired(), 0);
    // Each finding names its file and says what is wrong.
    let named = |code: FindingKind, id: &str| {
        before
            .findings
            .iter()
            .find(|f| f.code == code && f.id.as_deref() == Some(id))
            .unwrap()
            .clone()
    };
    let cut = named(FindingKind::DamagedRecord, "Truncat01");
    assert_eq!(cut.location, truncated.display().to_string());
    assert!(cut.detail.contains("truncated payload"), "{}", cut.detail);
    assert!(
        named(FindingKind::DamagedRecord, "Flipped01")
            .detail
            .contains("damaged header")
    );
    assert!(
        named(FindingKind::DamagedRecord, "Longer001")
            .detail
            .contains("longer than its header")
    );
    assert!(
        named(FindingKind::UnknownFormat, "Future001")
            .detail
            .contains("version '2'")
    );
    assert_eq!(cut.tenant.as_deref(), Some(t.as_str()));
    let usage = before
        .findings
        .iter()
        .find(|f| f.code == FindingKind::UsageMismatch)
        .unwrap();
    assert!(
        usage.detail.contains("recorded 103 bytes in 7 entries"),
        "{}",
        usage.detail
    );
    // Without --repair nothing changed.
    assert!(truncated.exists() && stale_tmp.exists());
    assert_eq!(
        doctor(&fx.settings, false).await.findings.len(),
        before.findings.len()
    );

    let repaired = doctor(&fx.settings, true).await;
    let text = repaired.to_text();
    let mut fixed: Vec<FindingKind> = repaired
        .findings
        .iter()
        .filter(|f| f.repaired.is_some())
        .map(|f| f.code)
        .collect();
    fixed.sort_by_key(|code| format!("{code:?}"));
    assert_eq!(
        fixed,
        vec![
            FindingKind::DamagedRecord,
            FindingKind::DamagedRecord,
            FindingKind::DamagedRecord,
            FindingKind::RowWithoutBlob,
            FindingKind::StaleTemporary,
            FindingKind::UsageMismatch,
        ],
        "{text}"
    );
    // Damaged files are moved aside, not deleted; the fresh temporary file
    // and the healthy paste are untouched.
    assert!(!truncated.exists());
    let quarantined = fx
        .data
        .join(".quarantine/team-a")
        .join(truncated.strip_prefix(fx.data.join("team-a")).unwrap());
    assert!(quarantined.exists(), "{text}");
    assert!(!stale_tmp.exists() && fresh_tmp.exists());
    // A read of a quarantined paste says it is damaged, not that it never was.
    let cut_key = PasteKey::new(ns.clone(), PasteId::parse("Truncat01").unwrap());
    match store.get(&cut_key).await {
        Err(paste_store::StoreError::Damaged { reason, .. }) => {
            assert!(reason.contains("moved aside"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let key = PasteKey::new(ns.clone(), PasteId::parse("Healthy01").unwrap());
    assert_eq!(store.get(&key).await.unwrap(), healthy);
    // Quota: the damaged pastes' and the lost one's released, the 5 bytes gone.
    let usage = catalog.count_usage(t).await.unwrap();
    assert!(usage.agrees(), "{usage:?}");
    assert_eq!(usage.recorded_pastes, 2, "Healthy01 and Future001 remain");
    assert!(
        catalog
            .paste_record(t, "NoFile001")
            .await
            .unwrap()
            .is_none()
    );
    let released = repaired
        .findings
        .iter()
        .find(|f| f.code == FindingKind::RowWithoutBlob)
        .and_then(|f| f.repaired.clone())
        .unwrap();
    assert_eq!(
        released,
        format!("row removed, {lost_bytes} bytes of quota released")
    );

    // A second run repairs nothing: what remains is what no repair may
    // touch (a file of a later format, a file without its row, a namespace
    // of no tenant).
    let again = doctor(&fx.settings, true).await;
    assert_eq!(again.repaired(), 0, "{}", again.to_text());
    assert_eq!(
        codes(&again),
        vec![
            (FindingKind::BlobWithoutRow, id("NoRow0001")),
            (FindingKind::UnknownFormat, id("Future001")),
            (FindingKind::UnknownNamespace, None),
        ]
    );
    // Once those are dealt with by hand, the store is healthy.
    std::fs::remove_dir_all(fx.data.join("ghost")).unwrap();
    std::fs::remove_file(&future).unwrap();
    catalog.forget_paste(t, "Future001").await.unwrap();
    store
        .delete(&PasteKey::new(
            ns.clone(),
            PasteId::parse("NoRow0001").unwrap(),
        ))
        .await
        .unwrap();
    let healthy_run = doctor(&fx.settings, false).await;
    assert!(healthy_run.findings.is_empty(), "{}", healthy_run.to_text());
    assert_eq!(healthy_run.exit_code(), 0);
    assert!(healthy_run.to_text().ends_with("healthy\n"));
}

/// Entries younger than --min-age are neither reported nor repaired: a
/// create writes its file and its row side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn young_entries_are_left_to_settle() {
    let fx = fixture();
    let catalog = Catalog::open(&fx.settings.catalog).await.unwrap();
    let tenant = new_tenant(&catalog, "Team B", "team-b").await;
    let ns = Namespace::parse("team-b").unwrap();
    let store = FsStore::open(&fx.settings.store.fs).await.unwrap();
    let now = now_ms();
    put(
        &store,
        &catalog,
        &tenant.id,
        &ns,
        "Young0001",
        &paste(now, "no row yet"),
        false,
    )
    .await;
    let p = put(
        &store,
        &catalog,
        &tenant.id,
        &ns,
        "Young0002",
        &paste(now, "no file yet"),
        true,
    )
    .await;
    std::fs::remove_file(p).unwrap();
    let report = doctor(&fx.settings, true).await;
    assert!(report.findings.is_empty(), "{}", report.to_text());
    assert_eq!(report.checked.too_young, 2);
    assert!(
        catalog
            .paste_record(&tenant.id, "Young0002")
            .await
            .unwrap()
            .is_some()
    );
}

/// The property the repairs are built around: `doctor --repair` running
/// again and again beside a create/read load never removes an acknowledged
/// paste. Every create answered `201` — plain (not indexed) and `/api/v1`
/// (indexed, with its quota) — still reads back afterwards, and the
/// tenant's usage agrees with its rows. Damage is injected meanwhile so the
/// repairs have work to do while the server writes: usage off by a few
/// bytes every round, and on fs a stale temporary file. On each store
/// (Redis and S3 skipped without their test servers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repairs_beside_a_live_load_never_remove_an_acknowledged_paste() {
    live_load_property(paste_store::StoreKind::Fs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repairs_beside_a_live_load_on_redis_never_remove_an_acknowledged_paste() {
    live_load_property(paste_store::StoreKind::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repairs_beside_a_live_load_on_s3_never_remove_an_acknowledged_paste() {
    live_load_property(paste_store::StoreKind::S3).await;
}

async fn live_load_property(kind: paste_store::StoreKind) {
    use paste_store::StoreKind;
    let redis = (kind == StoreKind::Redis).then(paste_store::conformance::env::redis);
    let s3 = (kind == StoreKind::S3).then(paste_store::conformance::env::s3);
    if matches!(redis, Some(None)) || matches!(s3, Some(None)) {
        return; // no test server (said on standard error)
    }
    let app = TestApp::spawn_configured(&[], |s| {
        s.store.kind = kind;
        if let Some(Some(config)) = redis {
            s.store.redis = config;
        }
        if let Some(Some(config)) = s3 {
            s.store.s3 = config;
        }
    })
    .await;
    let settings = app.settings.clone();
    let load_for = Duration::from_secs(6);
    let load = {
        let (client, base) = (app.client.clone(), app.base_url.clone());
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let mut acknowledged: Vec<(String, String)> = Vec::new();
            let mut n = 0u32;
            while started.elapsed() < load_for {
                n += 1;
                let data = format!("paste number {n}");
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
                if response.status() == 201 {
                    let body: serde_json::Value = response.json().await.unwrap();
                    acknowledged.push((body["id"].as_str().unwrap().to_owned(), data));
                }
                // Read one back now and then, as a live service would.
                if let Some((id, _)) = acknowledged.get(acknowledged.len() / 2) {
                    let _ = client.get(format!("{base}/api/paste/{id}")).send().await;
                }
            }
            acknowledged
        })
    };
    let on_fs = kind == StoreKind::Fs;
    let store_dir = app.store_dir();
    let catalog = Catalog::open(&settings.catalog).await.unwrap();
    let default = TenantId::parse("tnt_default").unwrap();
    let mut runs = 0;
    let mut repaired = 0;
    while !load.is_finished() {
        // A stale temporary file and usage off by a few bytes, every round.
        if on_fs {
            let shard = store_dir.join("default/6868");
            std::fs::create_dir_all(&shard).unwrap();
            let old = now_ms() - 2 * HOUR_MS;
            std::fs::write(shard.join(format!(".tmp-6868-{old}-{runs:016x}")), b"x").unwrap();
        }
        assert!(catalog.reserve(&default, 3).await.unwrap());
        let report = run(
            &settings,
            &DoctorOptions {
                repair: true,
                tenant: None,
                // Longer than any create here takes between its two writes.
                min_age: Duration::from_secs(2),
                progress: false,
            },
        )
        .await
        .unwrap();
        repaired += report.repaired();
        runs += 1;
    }
    let acknowledged = load.await.unwrap();
    assert!(
        acknowledged.len() > 50,
        "only {} creates",
        acknowledged.len()
    );
    let per_run = if on_fs { 2 } else { 1 };
    assert!(
        runs >= 2 && repaired >= per_run * runs,
        "{runs} runs, {repaired} repairs"
    );
    for (id, data) in &acknowledged {
        let response = app
            .client
            .get(app.url(&format!("/api/paste/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "acknowledged paste {id} is gone");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["data"], data.as_str());
    }
    // With the load over, a last run leaves usage and rows in agreement.
    let last = run(
        &settings,
        &DoctorOptions {
            repair: true,
            tenant: None,
            min_age: Duration::from_secs(0),
            progress: false,
        },
    )
    .await
    .unwrap();
    assert!(
        last.findings.iter().all(|f| f.repaired.is_some()),
        "{}",
        last.to_text()
    );
    assert!(catalog.count_usage(&default).await.unwrap().agrees());
}

/// The command as an operator runs it: upstream's `PASTE_DATA_DIR`, exit
/// status 0 healthy / 1 findings / 2 could not run, `--json` for scripts.
#[test]
fn the_command_reports_by_exit_status_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let doctor = |args: &[&str], vars: &[(&str, &str)]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_planshare-server"));
        command
            .arg("doctor")
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PASTE_DATA_DIR", dir.path());
        for (k, v) in vars {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, _) = doctor(&[], &[]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.ends_with("healthy\n"), "{stdout}");

    // A damaged paste file of the default tenant ("Broken01").
    let hex: String = "Broken01".bytes().map(|b| format!("{b:02x}")).collect();
    let shard = dir.path().join("default").join(&hex[..4]);
    std::fs::create_dir_all(&shard).unwrap();
    std::fs::write(shard.join(&hex), b"PSP1 but not much else").unwrap();
    let (code, stdout, _) = doctor(&["--json"], &[]);
    assert_eq!(code, Some(1), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["findings"][0]["code"], "damaged_record");
    assert_eq!(report["findings"][0]["id"], "Broken01");
    assert_eq!(
        report["findings"][0]["detail"],
        "truncated header: 22 of 64 bytes"
    );
    assert!(report["resources"]["peak_rss_kib"].as_u64().unwrap() > 0);

    // --repair refuses a settle time that could undo a create in flight.
    let (code, _, stderr) = doctor(&["--repair", "--min-age-secs", "5"], &[]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--min-age-secs 5 is below 40"), "{stderr}");
    let (code, stdout, _) = doctor(&["--repair"], &[]);
    assert_eq!(code, Some(0), "every finding repaired: {stdout}");
    assert!(stdout.contains("1 repaired, 0 remain"), "{stdout}");
    assert!(
        dir.path()
            .join(".quarantine/default")
            .join(&hex[..4])
            .join(&hex)
            .exists()
    );
    let (code, stdout, _) = doctor(&[], &[]);
    assert_eq!(code, Some(0), "{stdout}");

    // A store it cannot reach: it could not run, exit 2, and says why.
    let (code, _, stderr) = doctor(
        &[],
        &[
            ("PLANSHARE_STORE", "redis"),
            ("PLANSHARE_REDIS_URL", "redis://127.0.0.1:1"),
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot scan the Redis keys"), "{stderr}");
}

/// Raw access to a keyed store's values, to damage them.
trait RawValues {
    /// The key of `key`.
    fn name(&self, key: &PasteKey) -> String;
    async fn get(&self, name: &str) -> Vec<u8>;
    /// Replaces the value, keeping its expiry.
    async fn set(&self, name: &str, bytes: Vec<u8>);
    /// The keys the doctor moved aside, which it then removes.
    async fn take_quarantined(&self) -> Vec<String>;
}

struct RawRedis {
    store: paste_store::RedisStore,
    conn: redis::aio::MultiplexedConnection,
}

impl RawRedis {
    /// The store on `config` and raw access beside it.
    async fn open(config: &paste_store::RedisConfig) -> (paste_store::RedisStore, RawRedis) {
        let store = paste_store::RedisStore::open(config).await.unwrap();
        let conn = redis::Client::open(config.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let raw = RawRedis {
            store: store.clone(),
            conn,
        };
        (store, raw)
    }
}

impl RawValues for RawRedis {
    fn name(&self, key: &PasteKey) -> String {
        self.store.key_name(key)
    }
    async fn get(&self, name: &str) -> Vec<u8> {
        redis::cmd("GET")
            .arg(name)
            .query_async(&mut self.conn.clone())
            .await
            .unwrap()
    }
    async fn set(&self, name: &str, bytes: Vec<u8>) {
        let _: () = redis::cmd("SET")
            .arg(name)
            .arg(bytes)
            .arg("KEEPTTL")
            .query_async(&mut self.conn.clone())
            .await
            .unwrap();
    }
    async fn take_quarantined(&self) -> Vec<String> {
        let names: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}.quarantine:*", self.store.key_prefix()))
            .query_async(&mut self.conn.clone())
            .await
            .unwrap();
        if !names.is_empty() {
            let _: u64 = redis::cmd("DEL")
                .arg(&names)
                .query_async(&mut self.conn.clone())
                .await
                .unwrap();
        }
        names
    }
}

struct RawS3 {
    store: paste_store::S3Store,
    client: aws_sdk_s3::Client,
    bucket: String,
}

impl RawValues for RawS3 {
    fn name(&self, key: &PasteKey) -> String {
        self.store.object_name(key)
    }
    async fn get(&self, name: &str) -> Vec<u8> {
        self.store.object(name).await.unwrap().unwrap()
    }
    async fn set(&self, name: &str, bytes: Vec<u8>) {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(name)
            .body(bytes.into())
            .send()
            .await
            .unwrap();
    }
    async fn take_quarantined(&self) -> Vec<String> {
        let listed = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(format!("{}.quarantine/", self.store.prefix()))
            .send()
            .await
            .unwrap();
        let names: Vec<String> = listed
            .contents()
            .iter()
            .filter_map(|o| o.key().map(str::to_owned))
            .collect();
        for name in &names {
            self.client
                .delete_object()
                .bucket(&self.bucket)
                .key(name)
                .send()
                .await
                .unwrap();
        }
        names
    }
}

/// The damage of the fs test on a keyed store (Redis or S3): found, named
/// by key, repaired once (damaged values moved aside, a read of one
/// answering "damaged"), and a second run repairs nothing. `expired`: the
/// store keeps an expired value until something removes it (S3), so one
/// is stored and must be found and removed.
async fn keyed_damage_is_found_named_and_repaired_once<S, R>(
    settings: &Settings,
    store: &S,
    raw: &R,
    expired: bool,
) where
    S: paste_store::PasteStore,
    R: RawValues,
{
    let catalog = Catalog::open(&settings.catalog).await.unwrap();
    let tenant = new_tenant(&catalog, "Team K", "team-k").await;
    let t = &tenant.id;
    let ns = Namespace::parse("team-k").unwrap();
    let old = now_ms() - 2 * HOUR_MS;
    let key = |id: &str| PasteKey::new(ns.clone(), PasteId::parse(id).unwrap());
    for (id, indexed) in [
        ("Healthy01", true),
        ("Truncat01", true),
        ("Flipped01", true),
        ("Longer001", true),
        ("Future001", true),
        ("NoRow0001", false),
        ("NoFile001", true),
    ] {
        let p = paste(old, &format!("the paste {id}"));
        store.put_if_absent(&key(id), p.clone()).await.unwrap();
        if indexed {
            assert!(catalog.record_paste(t, &record(id, &p)).await.unwrap());
        }
    }
    if expired {
        let mut p = paste(old - 8 * 24 * HOUR_MS, "long gone");
        p.expires_at = old;
        store.put_if_absent(&key("Expired01"), p).await.unwrap();
    }
    let damage = [
        ("Truncat01", 1usize),
        ("Flipped01", 2),
        ("Longer001", 3),
        ("Future001", 4),
    ];
    for (id, how) in damage {
        let name = raw.name(&key(id));
        let mut bytes = raw.get(&name).await;
        match how {
            1 => bytes.truncate(bytes.len() - 3),
            2 => bytes[17] ^= 0x40,
            3 => bytes.push(b'!'),
            _ => bytes[3] = b'2',
        }
        raw.set(&name, bytes).await;
    }
    store.delete(&key("NoFile001")).await.unwrap();
    assert!(catalog.reserve(t, 5).await.unwrap());

    let before = doctor(settings, false).await;
    let id = |s: &str| Some(s.to_owned());
    let mut expected = vec![
        (FindingKind::BlobWithoutRow, id("NoRow0001")),
        (FindingKind::DamagedRecord, id("Flipped01")),
        (FindingKind::DamagedRecord, id("Longer001")),
        (FindingKind::DamagedRecord, id("Truncat01")),
        (FindingKind::RowWithoutBlob, id("NoFile001")),
        (FindingKind::UnknownFormat, id("Future001")),
        (FindingKind::UsageMismatch, None),
    ];
    if expired {
        expected.insert(4, (FindingKind::Expired, id("Expired01")));
    }
    assert_eq!(codes(&before), expected, "{}", before.to_text());
    let cut = before
        .findings
        .iter()
        .find(|f| f.id.as_deref() == Some("Truncat01"))
        .unwrap();
    assert_eq!(cut.location, raw.name(&key("Truncat01")));
    assert!(cut.detail.contains("truncated payload"), "{}", cut.detail);

    let repaired = doctor(settings, true).await;
    let fixed = if expired { 6 } else { 5 };
    assert_eq!(repaired.repaired(), fixed, "{}", repaired.to_text());
    match store.get(&key("Truncat01")).await {
        Err(paste_store::StoreError::Damaged { reason, .. }) => {
            assert!(reason.contains("moved aside"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(store.get(&key("Healthy01")).await.is_ok());
    assert!(catalog.count_usage(t).await.unwrap().agrees());

    let again = doctor(settings, true).await;
    assert_eq!(again.repaired(), 0, "{}", again.to_text());
    assert_eq!(
        codes(&again),
        vec![
            (FindingKind::BlobWithoutRow, id("NoRow0001")),
            (FindingKind::UnknownFormat, id("Future001")),
        ]
    );
    // Leave the shared store as found.
    store.purge_namespace(&ns).await.unwrap();
    let mut quarantined = raw.take_quarantined().await;
    quarantined.sort();
    let aside: Vec<String> = ["Flipped01", "Longer001", "Truncat01"]
        .iter()
        .map(|id| raw.name(&key(id)))
        .collect();
    assert_eq!(quarantined.len(), aside.len(), "{quarantined:?}");
    for (moved, from) in quarantined.iter().zip(&aside) {
        let rest = from.rsplit_once(['/', ':']).unwrap().1;
        assert!(
            moved.contains(".quarantine") && moved.ends_with(rest),
            "{moved}"
        );
    }
    catalog.close().await;
}

/// The damage on the Redis store (skipped without
/// `PLANSHARE_TEST_REDIS_URL`, which `scripts/test` sets).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_damage_is_found_named_and_repaired_once() {
    let Some(config) = paste_store::conformance::env::redis() else {
        return;
    };
    let fx = fixture();
    let mut settings = fx.settings.clone();
    settings.store.kind = paste_store::StoreKind::Redis;
    settings.store.redis = config.clone();
    let (store, raw) = RawRedis::open(&config).await;
    keyed_damage_is_found_named_and_repaired_once(&settings, &store, &raw, false).await;
}

/// The damage on the S3 store, with an expired object left behind too
/// (skipped without `PLANSHARE_TEST_S3_ENDPOINT`, which `scripts/test`
/// sets).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_damage_is_found_named_and_repaired_once() {
    let Some(config) = paste_store::conformance::env::s3() else {
        return;
    };
    let fx = fixture();
    let mut settings = fx.settings.clone();
    settings.store.kind = paste_store::StoreKind::S3;
    settings.store.s3 = config.clone();
    let store = paste_store::S3Store::open(&config).await.unwrap();
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new(config.region.clone()))
        .endpoint_url(&config.endpoint)
        .load()
        .await;
    let client = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(config.force_path_style)
            .build(),
    );
    let raw = RawS3 {
        store: store.clone(),
        client,
        bucket: config.bucket.clone(),
    };
    keyed_damage_is_found_named_and_repaired_once(&settings, &store, &raw, true).await;
}

/// The Redis damage again with the hosted catalog, PostgreSQL (skipped
/// without `PLANSHARE_TEST_DATABASE_URL` or Redis): the doctor's catalog
/// side — rows a page at a time, rows among a page of keys, quota released,
/// usage re-counted — on the other catalog backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damage_is_found_and_repaired_with_a_postgresql_catalog() {
    let Some(config) = paste_store::conformance::env::redis() else {
        return;
    };
    let Some(db) = tenancy::conformance::env::postgres().await else {
        return;
    };
    let fx = fixture();
    let mut settings = fx.settings.clone();
    settings.catalog = db.config.clone();
    settings.store.kind = paste_store::StoreKind::Redis;
    settings.store.redis = config.clone();
    let (store, raw) = RawRedis::open(&config).await;
    keyed_damage_is_found_named_and_repaired_once(&settings, &store, &raw, false).await;
    let report = doctor(&settings, false).await;
    assert_eq!(report.catalog, "postgres", "{}", report.to_text());
    drop(db);
}

/// The lower-case hex of `s`'s bytes: a paste file's name.
fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// A data directory with symbolic links planted at every level the doctor
/// walks, pointing outside it, and what they point to.
struct Planted {
    /// Outside the data directory: what the links point to.
    outside: tempfile::TempDir,
    /// Every link planted in the data directory.
    links: Vec<PathBuf>,
    catalog: Catalog,
    team_a: TenantId,
}

/// The store of `settings` without its background sweep (which would race
/// the doctor over the expired files these tests plant).
fn without_sweep(settings: &Settings) -> paste_store::FsConfig {
    paste_store::FsConfig {
        first_sweep_delay_secs: 3600,
        ..settings.store.fs.clone()
    }
}

/// Plants, in the data directory of `fx` (team-a and team-b tenants, one
/// healthy paste of team-a's):
/// - team-a's shard of ids beginning "Ou" as a link to a shard outside,
///   holding a paste expired two hours ago, a damaged paste, a stale
///   temporary file and a live paste the catalog indexes (whose row must
///   not be reported missing, nor removed);
/// - in the healthy paste's (real) shard: links named as a paste (to an
///   expired record, and to a damaged one), as a review blob and as a stale
///   temporary file, each to a single file outside;
/// - team-b's namespace directory as a link to a namespace outside (with an
///   expired paste), and `ghost-link`, a namespace-shaped link of no tenant.
async fn plant_symlinks(fx: &Fixture) -> Planted {
    use std::os::unix::fs::symlink;

    let catalog = Catalog::open(&fx.settings.catalog).await.unwrap();
    let team_a = new_tenant(&catalog, "Team A", "team-a").await.id;
    new_tenant(&catalog, "Team B", "team-b").await;
    let store = FsStore::open(&without_sweep(&fx.settings)).await.unwrap();
    let a = Namespace::parse("team-a").unwrap();
    let b = Namespace::parse("team-b").unwrap();
    let old = now_ms() - 2 * HOUR_MS;
    let healthy = put(
        &store,
        &catalog,
        &team_a,
        &a,
        "Healthy01",
        &paste(old, "healthy"),
        true,
    )
    .await;
    let shard = healthy.parent().unwrap().to_path_buf();

    let outside = tempfile::tempdir().unwrap();
    let elsewhere = FsStore::open(&paste_store::FsConfig {
        path: outside.path().join("store"),
        first_sweep_delay_secs: 3600,
        ..fx.settings.store.fs.clone()
    })
    .await
    .unwrap();
    let expired = StoredPaste {
        expires_at: old,
        ..paste(old - 7 * 24 * HOUR_MS, "expired two hours ago")
    };
    let key = |ns: &Namespace, id: &str| PasteKey::new(ns.clone(), PasteId::parse(id).unwrap());
    elsewhere
        .put_if_absent(&key(&a, "OutExp001"), expired.clone())
        .await
        .unwrap();
    elsewhere
        .put_if_absent(&key(&a, "OutBad001"), paste(old, "to be cut short"))
        .await
        .unwrap();
    rewrite(&elsewhere.path_of(&key(&a, "OutBad001")), |b| {
        b.truncate(b.len() - 3)
    });
    let live = paste(old, "live, behind a link");
    elsewhere
        .put_if_absent(&key(&a, "OutLive01"), live.clone())
        .await
        .unwrap();
    assert!(
        catalog
            .record_paste(&team_a, &record("OutLive01", &live))
            .await
            .unwrap()
    );
    let outside_shard = elsewhere
        .path_of(&key(&a, "OutExp001"))
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::write(
        outside_shard.join(format!(".tmp-{}-{old}-00000000000000aa", hex("OutTmp01"))),
        b"half a paste",
    )
    .unwrap();
    elsewhere
        .put_if_absent(&key(&b, "OutExp002"), expired.clone())
        .await
        .unwrap();
    let lone = outside.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    std::fs::copy(
        elsewhere.path_of(&key(&a, "OutExp001")),
        lone.join("expired"),
    )
    .unwrap();
    std::fs::write(lone.join("damaged"), b"PSP1 but not much else").unwrap();
    std::fs::write(lone.join("stale"), b"half a paste").unwrap();
    drop(elsewhere);

    let links = vec![
        // A shard directory.
        (outside_shard, fx.data.join("team-a").join(&hex("Ou")[..4])),
        // Files of a real shard, named as the store names them.
        (lone.join("expired"), shard.join(hex("HeLink001"))),
        (lone.join("damaged"), shard.join(hex("HeLink002"))),
        (
            lone.join("expired"),
            shard.join(format!("r{}", hex("HeBlob001"))),
        ),
        (
            lone.join("stale"),
            shard.join(format!(".tmp-{}-{old}-00000000000000bb", hex("HeTmp0001"))),
        ),
        // A tenant's namespace directory, and one of no tenant.
        (outside.path().join("store/team-b"), fx.data.join("team-b")),
        (lone.clone(), fx.data.join("ghost-link")),
    ];
    for (target, link) in &links {
        symlink(target, link).unwrap();
    }
    Planted {
        outside,
        links: links.into_iter().map(|(_, link)| link).collect(),
        catalog,
        team_a,
    }
}

/// The findings of `report` whose code is `symlink`, by location, sorted.
fn symlink_findings(report: &Report) -> Vec<String> {
    let mut out: Vec<String> = report
        .findings
        .iter()
        .filter(|f| serde_json::to_value(f.code).unwrap() == "symlink")
        .map(|f| f.location.clone())
        .collect();
    out.sort();
    out
}

fn sorted(paths: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    out.sort();
    out
}

/// A symbolic link at any level the doctor walks — a namespace, a shard, a
/// paste file, a review blob, a temporary file — is reported as a finding
/// of its own (`symlink`, with its path), never followed and never
/// repaired: `--repair` deletes, moves and rewrites nothing outside the
/// data directory (not the expired paste, the stale temporary file or the
/// damaged paste the shard link leads to) and leaves the links as they
/// are. Nothing behind a link is reported as missing either: the live
/// paste's row behind the shard link stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_are_reported_never_followed_nor_repaired() {
    let fx = fixture();
    let planted = plant_symlinks(&fx).await;
    let outside_before = snapshot(planted.outside.path());
    let links_before: Vec<_> = planted
        .links
        .iter()
        .map(|l| std::fs::read_link(l).unwrap())
        .collect();

    let report = doctor(&fx.settings, false).await;
    let text = report.to_text();
    assert_eq!(symlink_findings(&report), sorted(&planted.links), "{text}");
    assert_eq!(
        report.findings.len(),
        planted.links.len(),
        "only the links are findings: {text}"
    );
    assert_eq!(report.exit_code(), 1, "{text}");
    for link in &planted.links {
        assert!(
            text.contains(&format!("Symlink: {}", link.display())),
            "{text}"
        );
    }
    assert!(text.contains("an operator must look at"), "{text}");

    let repaired = doctor(&fx.settings, true).await;
    let text = repaired.to_text();
    assert_eq!(
        symlink_findings(&repaired),
        sorted(&planted.links),
        "{text}"
    );
    assert_eq!(repaired.repaired(), 0, "{text}");
    assert_eq!(repaired.exit_code(), 1, "{text}");
    assert_eq!(
        snapshot(planted.outside.path()),
        outside_before,
        "doctor --repair changed files outside the data directory: {text}"
    );
    for (link, target) in planted.links.iter().zip(&links_before) {
        assert_eq!(&std::fs::read_link(link).unwrap(), target, "{text}");
    }
    assert!(
        !fx.data.join(".quarantine").exists(),
        "nothing was quarantined: {text}"
    );
    assert!(
        planted
            .catalog
            .paste_record(&planted.team_a, "OutLive01")
            .await
            .unwrap()
            .is_some(),
        "{text}"
    );
    // Once an operator has removed the links, the store is healthy.
    for link in &planted.links {
        std::fs::remove_file(link).unwrap();
    }
    planted
        .catalog
        .forget_paste(&planted.team_a, "OutLive01")
        .await
        .unwrap();
    let healthy = doctor(&fx.settings, false).await;
    assert!(healthy.findings.is_empty(), "{}", healthy.to_text());
}

/// The quarantine directory as a link (and, in a real one, a namespace of
/// it as a link): a damaged paste is not moved through it — it stays where
/// it is, its finding unrepaired — and the link is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantine_behind_a_symlink_is_not_used() {
    use std::os::unix::fs::symlink;

    let fx = fixture();
    let catalog = Catalog::open(&fx.settings.catalog).await.unwrap();
    let tenant = new_tenant(&catalog, "Team A", "team-a").await.id;
    let store = FsStore::open(&without_sweep(&fx.settings)).await.unwrap();
    let ns = Namespace::parse("team-a").unwrap();
    let old = now_ms() - 2 * HOUR_MS;
    let broken = put(
        &store,
        &catalog,
        &tenant,
        &ns,
        "Broken001",
        &paste(old, "to be cut short"),
        true,
    )
    .await;
    rewrite(&broken, |b| b.truncate(b.len() - 3));
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("q")).unwrap();

    for link in [
        fx.data.join(".quarantine"),
        fx.data.join(".quarantine/team-a"),
    ] {
        // The second time, a real quarantine directory holding the link.
        if link.ends_with("team-a") {
            std::fs::create_dir(fx.data.join(".quarantine")).unwrap();
        }
        symlink(outside.path().join("q"), &link).unwrap();
        let before = snapshot(outside.path());
        let report = doctor(&fx.settings, true).await;
        let text = report.to_text();
        assert_eq!(
            symlink_findings(&report),
            vec![link.display().to_string()],
            "{text}"
        );
        let damaged: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.code == FindingKind::DamagedRecord)
            .collect();
        assert_eq!(damaged.len(), 1, "{text}");
        assert!(damaged[0].repaired.is_none(), "{text}");
        assert_eq!(report.exit_code(), 1);
        assert!(broken.exists(), "{text}");
        assert_eq!(snapshot(outside.path()), before, "{text}");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        std::fs::remove_file(&link).unwrap();
    }
    // With a real quarantine, the damaged paste goes there.
    let report = doctor(&fx.settings, true).await;
    assert_eq!(report.exit_code(), 0, "{}", report.to_text());
    assert!(!broken.exists());
}

/// The command: the links are named in the text report and in `--json`
/// (code `symlink`), the exit status is 1 with and without `--repair`,
/// and nothing outside changed.
#[test]
fn the_command_reports_symlinks_and_exits_1() {
    let fx = fixture();
    let planted = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let planted = plant_symlinks(&fx).await;
        planted.catalog.close().await;
        planted
    });
    let outside_before = snapshot(planted.outside.path());
    let doctor = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_planshare-server"))
            .arg("doctor")
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PASTE_DATA_DIR", &fx.data)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, stdout) = doctor(&[]);
    assert_eq!(code, Some(1), "{stdout}");
    for link in &planted.links {
        assert!(
            stdout.contains(&format!("Symlink: {}", link.display())),
            "{stdout}"
        );
    }
    for args in [&["--json"][..], &["--repair", "--json"]] {
        let (code, stdout) = doctor(args);
        assert_eq!(code, Some(1), "{args:?}: {stdout}");
        let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let mut links: Vec<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["code"] == "symlink")
            .map(|f| {
                assert!(f.get("repaired").is_none(), "{f}");
                f["location"].as_str().unwrap().to_owned()
            })
            .collect();
        links.sort();
        assert_eq!(links, sorted(&planted.links), "{args:?}: {stdout}");
    }
    assert_eq!(snapshot(planted.outside.path()), outside_before);
}

//! `planshare admin …` against a real server with the admin API on.

use testkit::TestApp;

use crate::support::planshare;

const TOKEN: &str = "cli-admin-token-0123456789";

#[tokio::test]
async fn tenants_keys_and_usage_round_trip() {
    let app = TestApp::spawn_configured(&[], |s| s.admin.token = TOKEN.into()).await;
    let env = [
        ("PLANSHARE_ADMIN_URL", app.base_url.as_str()),
        ("PLANSHARE_ADMIN_TOKEN", TOKEN),
    ];
    let run = |args: &'static [&'static str]| planshare(args, &env, "");

    let created = planshare(
        &[
            "admin",
            "tenants",
            "create",
            "--name",
            "Team A",
            "--namespace",
            "team-a",
            "--host",
            "a.example.com",
            "--quota-pastes",
            "50",
            "--allow-anonymous",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(created.code, 0, "{}", created.stderr);
    let tenant: serde_json::Value = serde_json::from_str(&created.stdout).unwrap();
    let tid = tenant["id"].as_str().unwrap().to_owned();
    assert_eq!(tenant["settings"]["hosts"][0], "a.example.com");
    assert_eq!(tenant["settings"]["quota_pastes"], 50);
    assert_eq!(tenant["settings"]["allow_anonymous"], true);

    let list = run(&["admin", "tenants", "list"]).await;
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(list.stdout.contains(&tid));

    let key = planshare(&["admin", "keys", "create", &tid, "--name", "ci"], &env, "").await;
    assert_eq!(key.code, 0, "{}", key.stderr);
    let created_key: serde_json::Value = serde_json::from_str(&key.stdout).unwrap();
    let secret = created_key["key"].as_str().unwrap();
    let key_id = created_key["id"].as_str().unwrap();
    assert!(secret.starts_with("pst_live_"));
    assert_eq!(key.stdout.matches(secret).count(), 1, "the key once");
    assert!(key.stderr.contains("not shown again"), "{}", key.stderr);

    let keys = planshare(&["admin", "keys", "list", &tid], &env, "").await;
    assert_eq!(keys.code, 0, "{}", keys.stderr);
    assert!(keys.stdout.contains(key_id) && !keys.stdout.contains(secret));

    let revoke = planshare(&["admin", "keys", "revoke", &tid, key_id], &env, "").await;
    assert_eq!(
        (revoke.code, revoke.stdout.as_str()),
        (0, ""),
        "{}",
        revoke.stderr
    );
    let keys = planshare(&["admin", "keys", "list", &tid], &env, "").await;
    let listed: serde_json::Value = serde_json::from_str(&keys.stdout).unwrap();
    assert!(listed["keys"][0]["revoked_at"].is_i64(), "{listed}");

    let usage = planshare(&["admin", "usage", &tid], &env, "").await;
    assert_eq!(usage.code, 0, "{}", usage.stderr);
    let usage: serde_json::Value = serde_json::from_str(&usage.stdout).unwrap();
    assert_eq!(usage["pastes"], 0);

    let update = planshare(
        &[
            "admin",
            "tenants",
            "update",
            &tid,
            "--allow-anonymous",
            "false",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(update.code, 0, "{}", update.stderr);
    assert!(update.stdout.contains("\"allow_anonymous\": false"));

    let again = planshare(
        &[
            "admin",
            "tenants",
            "create",
            "--name",
            "B",
            "--namespace",
            "team-a",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(
        again.code, 14,
        "duplicate namespace is rejected: {}",
        again.stderr
    );

    let delete = planshare(&["admin", "tenants", "delete", &tid], &env, "").await;
    assert_eq!(delete.code, 0, "{}", delete.stderr);
    let gone = planshare(&["admin", "tenants", "get", &tid], &env, "").await;
    assert_eq!(gone.code, 6, "{}", gone.stderr);
}

#[tokio::test]
async fn a_wrong_token_fails_with_one_line() {
    let app = TestApp::spawn_configured(&[], |s| s.admin.token = TOKEN.into()).await;
    // A token that begins with `-` is the option's value, not an unknown flag.
    for token in ["wrong", "-wrong"] {
        let run = planshare(
            &[
                "admin",
                "tenants",
                "list",
                "--url",
                &app.base_url,
                "--token",
                token,
            ],
            &[],
            "",
        )
        .await;
        assert_eq!(run.code, 12, "{token}: {}", run.stderr);
        assert_eq!(run.stdout, "");
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(!run.stderr.contains("wrong"), "{}", run.stderr);
    }

    let no_token = planshare(
        &["admin", "tenants", "list", "--url", &app.base_url],
        &[],
        "",
    )
    .await;
    assert_eq!(no_token.code, 2, "{}", no_token.stderr);

    let off = TestApp::spawn(&[]).await;
    let run = planshare(
        &[
            "admin",
            "tenants",
            "list",
            "--url",
            &off.base_url,
            "--token",
            TOKEN,
        ],
        &[],
        "",
    )
    .await;
    assert_eq!(run.code, 11, "{}", run.stderr);
    assert!(run.stderr.contains("no admin API"), "{}", run.stderr);
}

/// `PLANSHARE_API_KEY` makes the CLI's creates the tenant's: the paste lives
/// in the tenant's namespace (readable with the key, absent for the default
/// tenant) and counts against its quota.
#[tokio::test]
async fn an_api_key_stores_cli_pastes_for_its_tenant() {
    let app = TestApp::spawn_configured(&[], |s| s.admin.token = TOKEN.into()).await;
    let admin_env = [
        ("PLANSHARE_ADMIN_URL", app.base_url.as_str()),
        ("PLANSHARE_ADMIN_TOKEN", TOKEN),
    ];
    let created = planshare(
        &[
            "admin",
            "tenants",
            "create",
            "--name",
            "Team K",
            "--namespace",
            "team-k",
            "--quota-pastes",
            "1",
        ],
        &admin_env,
        "",
    )
    .await;
    assert_eq!(created.code, 0, "{}", created.stderr);
    let tenant: serde_json::Value = serde_json::from_str(&created.stdout).unwrap();
    let tid = tenant["id"].as_str().unwrap().to_owned();
    let key = planshare(
        &["admin", "keys", "create", &tid, "--name", "cli"],
        &admin_env,
        "",
    )
    .await;
    assert_eq!(key.code, 0, "{}", key.stderr);
    let key: serde_json::Value = serde_json::from_str(&key.stdout).unwrap();
    let key = key["key"].as_str().unwrap().to_owned();

    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANSHARE_API_KEY", key.as_str()),
    ];
    let put = planshare(&["paste", "put", "-"], &env, "Xc6xCsJAEATQ").await;
    assert_eq!(put.code, 0, "{}", put.stderr);
    let id = serde_json::from_str::<serde_json::Value>(&put.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let as_tenant = app
        .client
        .get(app.url(&format!("/api/v1/pastes/{id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(as_tenant.status(), 200);
    let anonymous = app.get_path(&format!("/api/paste/{id}")).await;
    assert_eq!(anonymous.status(), 404, "not in the default tenant");

    let over = planshare(&["paste", "put", "-"], &env, "Xc6xCsJAEATQ").await;
    assert_ne!(over.code, 0, "the quota of one paste is used up");
    assert!(over.stderr.contains("quota"), "{}", over.stderr);

    let usage = planshare(&["admin", "usage", &tid], &admin_env, "").await;
    assert_eq!(usage.code, 0, "{}", usage.stderr);
    let usage: serde_json::Value = serde_json::from_str(&usage.stdout).unwrap();
    assert_eq!(usage["pastes"], 1);
}

/// A new tenant with no hosts, and an API key of it.
async fn tenant_key(app: &TestApp, namespace: &str) -> String {
    let admin_env = [
        ("PLANSHARE_ADMIN_URL", app.base_url.as_str()),
        ("PLANSHARE_ADMIN_TOKEN", TOKEN),
    ];
    let created = planshare(
        &[
            "admin",
            "tenants",
            "create",
            "--name",
            namespace,
            "--namespace",
            namespace,
        ],
        &admin_env,
        "",
    )
    .await;
    assert_eq!(created.code, 0, "{}", created.stderr);
    let tenant: serde_json::Value = serde_json::from_str(&created.stdout).unwrap();
    let tid = tenant["id"].as_str().unwrap().to_owned();
    let key = planshare(
        &["admin", "keys", "create", &tid, "--name", "cli"],
        &admin_env,
        "",
    )
    .await;
    assert_eq!(key.code, 0, "{}", key.stderr);
    let key: serde_json::Value = serde_json::from_str(&key.stdout).unwrap();
    key["key"].as_str().unwrap().to_owned()
}

/// A keyed tenant without hosts: its pastes are found only with its key, and
/// the CLI sends the key on reads and deletes too, so it reads back and
/// deletes what it made.
#[tokio::test]
async fn a_keyed_tenant_reads_and_deletes_what_the_cli_made() {
    let app = TestApp::spawn_configured(&[], |s| s.admin.token = TOKEN.into()).await;
    let key = tenant_key(&app, "team-r").await;
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANSHARE_API_KEY", key.as_str()),
    ];
    let plan = "# Plan\n\nRotate the keys.\n";
    let share = planshare(&["share", "-", "--short", "--json"], &env, plan).await;
    assert_eq!(share.code, 0, "{}", share.stderr);
    let out: serde_json::Value = serde_json::from_str(&share.stdout).unwrap();
    let (url, id) = (out["url"].as_str().unwrap(), out["id"].as_str().unwrap());

    let opened = planshare(&["open", url, "--format", "markdown"], &env, "").await;
    assert_eq!(
        (opened.code, opened.stdout.as_str()),
        (0, plan),
        "{}",
        opened.stderr
    );
    let get = planshare(&["paste", "get", id], &env, "").await;
    assert_eq!(get.code, 0, "{}", get.stderr);
    // Without the key the paste is not there (it is the tenant's).
    let anonymous = planshare(&["open", url], &[], "").await;
    assert_eq!(anonymous.code, 6, "{}", anonymous.stderr);

    let no_credential = planshare(
        &["paste", "delete", id],
        &[("PLANNOTATOR_PASTE_URL", app.base_url.as_str())],
        "",
    )
    .await;
    assert_eq!(no_credential.code, 2, "{}", no_credential.stderr);
    let delete = planshare(&["paste", "delete", id], &env, "").await;
    assert_eq!(
        (delete.code, delete.stdout.as_str()),
        (0, ""),
        "{}",
        delete.stderr
    );
    let gone = planshare(&["paste", "get", id], &env, "").await;
    assert_eq!(gone.code, 6, "{}", gone.stderr);
}

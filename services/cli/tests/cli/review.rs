//! `planshare review …` and `open` of review links against the real server:
//! the whole flow with real encryption, `watch` as a child process (its
//! events, its feedback export and exit codes), `watch` across a server
//! restart, and no token or key on any command's stderr.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use share_codec::{ShareKey, compress, encrypt_with, parse_review_link};
use testkit::{ChildServer, TestApp, wait_ready};

use crate::support::{Events, FLOOD_LIMIT, FakeReview, Run, planshare};

const PLAN: &str = "# Plan\n\n## Step 1\n\nAdd auth middleware to all protected routes.\n\n## Step 2\n\nWrite the migration.\n";

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The secrets of a link: its key and its token.
fn secrets(link: &str) -> Vec<String> {
    let parsed = parse_review_link(link).unwrap();
    vec![parsed.key, parsed.token.unwrap()]
}

/// Asserts that no secret appears in `text`.
fn assert_no_secret(text: &str, secrets: &[String], what: &str) {
    for secret in secrets {
        assert!(
            !text.contains(secret.as_str()),
            "{what} leaks a secret: {text}"
        );
    }
}

/// `review start` with one reviewer link: (owner link, reviewer link).
async fn start(env: &[(&str, &str)], plan: &str) -> (String, String, Run) {
    let run = planshare(&["review", "start", plan, "--json"], env, "").await;
    assert_eq!(run.code, 0, "start: {}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    let owner = out["owner"].as_str().unwrap().to_owned();
    let reviewers = out["reviewers"].as_array().unwrap();
    assert_eq!(reviewers.len(), 1);
    assert!(owner.contains(&format!("/r/{}#key=", out["id"].as_str().unwrap())));
    (owner, reviewers[0].as_str().unwrap().to_owned(), run)
}

/// Stores `name`'s comment set through the HTTP API, encrypted with the
/// link's key as the portal would: `{"v":1,"a":[tuples]}`.
async fn comment(api: &str, link: &str, name: &str, tuples: Value) {
    comment_on(api, link, name, 1, tuples).await;
}

/// [`comment`] on version `version`.
async fn comment_on(api: &str, link: &str, name: &str, version: u64, tuples: Value) {
    let parsed = parse_review_link(link).unwrap();
    let key = ShareKey::parse(&parsed.key).unwrap();
    let plaintext = json!({ "v": version, "a": tuples }).to_string();
    let data = encrypt_with(&key, &[9; 12], &compress(&plaintext));
    let response = reqwest::Client::new()
        .put(format!("{api}/api/v1/reviews/{}/comments", parsed.id))
        .bearer_auth(parsed.token.unwrap())
        .json(&json!({ "name": name, "version": version, "data": data }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
}

/// `planshare review watch` as a child process, its stderr collected as
/// it comes.
struct Watch {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Watch {
    fn spawn(link: &str, env: &[(&str, &str)]) -> Watch {
        Watch::spawn_with(link, &[], env)
    }

    /// `review watch LINK extra…`.
    fn spawn_with(link: &str, extra: &[&str], env: &[(&str, &str)]) -> Watch {
        let mut child = Command::new(env!("CARGO_BIN_EXE_planshare"))
            .args(["review", "watch", link])
            .args(extra)
            .env_clear()
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().unwrap();
        let collected = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut text = collected.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        Watch { child, stderr }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr contains `needle`.
    async fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.stderr().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "watch never printed {needle:?}; its stderr:\n{}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for the exit: (code, stdout, stderr).
    async fn finish(mut self) -> (i32, String, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "watch did not exit; its stderr:\n{}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let mut stdout = String::new();
        std::io::Read::read_to_string(&mut self.child.stdout.take().unwrap(), &mut stdout).unwrap();
        // Let the reader thread drain the pipe.
        tokio::time::sleep(Duration::from_millis(100)).await;
        (status.code().unwrap_or(-1), stdout, self.stderr())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn start_open_comment_watch_decide_and_the_feedback_arrives() {
    let app = TestApp::spawn(&[]).await;
    // A portal on another origin: the links carry `&paste=`.
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", "https://portal.example"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let (owner, reviewer, started) = start(&env, &plan).await;
    assert!(owner.starts_with("https://portal.example/r/"), "{owner}");
    assert!(owner.contains("&paste="), "{owner}");
    let mut secrets = secrets(&owner);
    secrets.extend(self::secrets(&reviewer));
    assert_no_secret(&started.stderr, &secrets, "start");

    // The reviewer reads the plan.
    let read = planshare(&["open", &reviewer, "--format", "markdown"], &env, "").await;
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert_eq!(read.stdout, PLAN);
    assert_no_secret(&read.stderr, &secrets, "open");

    // The owner watches; alice comments.
    let watch = Watch::spawn(&owner, &env);
    watch.wait_for("watching review").await;
    comment(
        &app.base_url,
        &reviewer,
        "alice",
        json!([["C", "auth middleware", "add rate limiting", null, null]]),
    )
    .await;
    watch.wait_for("alice commented on v1 (1 annotation)").await;

    // `open` of the reviewer link merges alice's comments.
    let open = planshare(&["open", &reviewer, "--format", "json"], &env, "").await;
    assert_eq!(open.code, 0, "{}", open.stderr);
    let opened: Value = serde_json::from_str(&open.stdout).unwrap();
    assert_eq!(opened["kind"], "review");
    assert_eq!(opened["annotations"][0]["author"], "alice");
    assert_eq!(opened["annotations"][0]["text"], "add rate limiting");
    // The plan has no task items: no steps (a review link's JSON has the
    // field as a share link's does).
    assert!(
        opened.as_object().unwrap().contains_key("steps"),
        "{opened}"
    );
    assert_eq!(opened["steps"], Value::Null);

    // The owner lists the links and requests changes with text feedback.
    let links = planshare(&["review", "links", &owner], &env, "").await;
    assert_eq!(links.code, 0, "{}", links.stderr);
    assert!(links.stdout.contains("alice"), "{}", links.stdout);
    let feedback = write(&dir, "feedback.txt", "Split step 2 into two.\n");
    let decided = planshare(
        &[
            "review",
            "decide",
            &owner,
            "--request-changes",
            "--feedback",
            &feedback,
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(decided.code, 0, "{}", decided.stderr);
    assert_eq!(decided.stdout, "changes requested v1 (round 1)\n");

    let (code, stdout, stderr) = watch.finish().await;
    assert_eq!(code, 15, "stderr:\n{stderr}");
    assert!(stdout.contains("add rate limiting"), "{stdout}");
    assert!(stdout.contains("auth middleware"), "{stdout}");
    assert!(stdout.contains("Split step 2 into two."), "{stdout}");
    assert!(stderr.contains("changes requested"), "{stderr}");
    assert_eq!(stderr.matches("alice commented").count(), 1, "{stderr}");

    // A watch of a decided review answers at once, as the reviewer too.
    let again = planshare(&["review", "watch", &reviewer], &env, "").await;
    assert_eq!(again.code, 15, "{}", again.stderr);
    assert!(again.stdout.contains("add rate limiting"));

    // A second decision is refused; a link without its token is unusable.
    let twice = planshare(&["review", "decide", &owner, "--approve"], &env, "").await;
    assert_eq!(twice.code, 14, "{}", twice.stderr);
    let tokenless = reviewer.split("&t=").next().unwrap().to_owned();
    let refused = planshare(&["open", &tokenless], &env, "").await;
    assert_eq!(refused.code, 4, "{}", refused.stderr);
    assert!(refused.stderr.contains("no token"), "{}", refused.stderr);

    for run in [&links, &decided, &again, &twice, &refused] {
        assert_no_secret(&run.stderr, &secrets, "a review command");
    }
    assert_no_secret(&stderr, &secrets, "watch");
}

#[tokio::test]
async fn push_links_and_revocation() {
    let app = TestApp::spawn(&[]).await;
    // The portal is the API's own origin: no `&paste=`.
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let (owner, reviewer, _) = start(&env, &plan).await;
    assert!(!owner.contains("paste="), "{owner}");
    let mut secrets = secrets(&owner);
    secrets.extend(self::secrets(&reviewer));

    let same = planshare(&["review", "push", &plan, "--review", &owner], &env, "").await;
    assert_eq!(
        (same.code, same.stdout.as_str()),
        (0, "unchanged (v1)\n"),
        "{}",
        same.stderr
    );
    let v2 = write(&dir, "v2.md", &format!("{PLAN}\n## Step 3\n\nDeploy.\n"));
    let pushed = planshare(&["review", "push", &v2, "--review", &owner], &env, "").await;
    assert_eq!(
        (pushed.code, pushed.stdout.as_str()),
        (0, "v2\n"),
        "{}",
        pushed.stderr
    );
    let by_reviewer = planshare(&["review", "push", &v2, "--review", &reviewer], &env, "").await;
    assert_eq!(by_reviewer.code, 12, "{}", by_reviewer.stderr);

    let added = planshare(&["review", "links", &owner, "--add"], &env, "").await;
    assert_eq!(added.code, 0, "{}", added.stderr);
    let (_, second) = added.stdout.trim_end().rsplit_once("  ").unwrap();
    assert!(added.stdout.contains("  reviewer  "), "{}", added.stdout);
    secrets.extend(self::secrets(second));

    // The reviewer watches; its own link is revoked: exit 16.
    let watch = Watch::spawn(&reviewer, &env);
    watch.wait_for("watching review").await;
    let reviewer_id = {
        let listed = planshare(&["review", "links", &owner], &env, "").await;
        assert_eq!(listed.code, 0, "{}", listed.stderr);
        assert_eq!(listed.stdout.lines().count(), 2, "{}", listed.stdout);
        // The watcher's link is the first minted (the list is oldest first).
        listed
            .stdout
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned()
    };
    let revoked = planshare(
        &["review", "links", &owner, "--revoke", &reviewer_id],
        &env,
        "",
    )
    .await;
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    let (code, _, stderr) = watch.finish().await;
    assert_eq!(code, 16, "{stderr}");
    assert!(stderr.contains("revoked"), "{stderr}");
    let after = planshare(&["open", &reviewer], &env, "").await;
    assert_eq!(after.code, 6, "{}", after.stderr);
    for run in [&same, &pushed, &by_reviewer, &added, &revoked, &after] {
        assert_no_secret(&run.stderr, &secrets, "a review command");
    }
    assert_no_secret(&stderr, &secrets, "watch");
}

/// The server binary next to the test's (`cargo build -p planshare-server`).
fn server_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let binary = dir.join("planshare-server");
    assert!(
        binary.exists(),
        "{} is missing: run `cargo build -p planshare-server` first",
        binary.display()
    );
    binary
}

async fn server(port: u16, data: &std::path::Path) -> ChildServer {
    let process = ChildServer::spawn(
        Command::new(server_binary())
            .env_clear()
            .env("PLANSHARE_HOST", "127.0.0.1")
            .env("PLANSHARE_PORT", port.to_string())
            .env("PLANSHARE_DATA_DIR", data)
            .env("PLANSHARE_RATE_LIMITS", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    assert!(
        wait_ready(&format!("http://127.0.0.1:{port}"), Duration::from_secs(20)).await,
        "the server did not become ready"
    );
    process
}

#[tokio::test]
async fn watch_survives_a_server_restart_and_prints_no_event_twice() {
    let port = testkit::free_port();
    let data = tempfile::tempdir().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let env = [
        ("PLANNOTATOR_PASTE_URL", base.as_str()),
        ("PLANNOTATOR_SHARE_URL", base.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let mut process = server(port, data.path()).await;
    let (owner, reviewer, _) = start(&env, &plan).await;
    let mut secrets = secrets(&owner);
    secrets.extend(self::secrets(&reviewer));

    let watch = Watch::spawn(&reviewer, &env);
    watch.wait_for("watching review").await;
    comment(
        &base,
        &reviewer,
        "alice",
        json!([["G", "looks good", null, null]]),
    )
    .await;
    watch.wait_for("alice commented on v1 (1 annotation)").await;

    // A graceful restart (the stream ends with `: …reconnect`)…
    assert!(
        process.terminate(Duration::from_secs(20)).await,
        "no clean exit"
    );
    process = server(port, data.path()).await;
    let v2 = write(&dir, "v2.md", &format!("{PLAN}\n## Step 3\n\nDeploy.\n"));
    let pushed = planshare(&["review", "push", &v2, "--review", &owner], &env, "").await;
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);
    watch.wait_for("v2 pushed").await;

    // …and a crash (SIGKILL: the connection just drops).
    drop(process);
    let process = server(port, data.path()).await;
    let approved = planshare(&["review", "decide", &owner, "--approve"], &env, "").await;
    assert_eq!(approved.code, 0, "{}", approved.stderr);

    let (code, stdout, stderr) = watch.finish().await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("looks good"), "{stdout}");
    for line in ["alice commented on v1", "v2 pushed", "approved"] {
        assert_eq!(stderr.matches(line).count(), 1, "{line}: {stderr}");
    }
    assert!(stderr.contains("reconnect"), "{stderr}");
    assert_no_secret(&stderr, &secrets, "watch");
    assert_no_secret(&pushed.stderr, &secrets, "push");
    drop(process);
}

#[tokio::test]
async fn watch_stops_at_an_event_that_never_ends() {
    // `data:` lines and no blank line: without a bound on the event, the
    // watcher would gather them all (2 GB in 18 s, as reported).
    let fake = FakeReview::start(Events::Flood).await;
    let mut watch = Watch::spawn(&fake.link, &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while watch.child.try_wait().unwrap().is_none() {
        assert!(
            fake.sent() < FLOOD_LIMIT,
            "the server sent {} MiB of one event and watch is still reading; its stderr:\n{}",
            fake.sent() >> 20,
            watch.stderr()
        );
        assert!(
            Instant::now() < deadline,
            "watch did not exit; its stderr:\n{}",
            watch.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (code, stdout, stderr) = watch.finish().await;
    assert_eq!(code, 11, "{stderr}");
    assert_eq!(stdout, "");
    // What it read was bounded: the 1 MiB event plus what the sockets held.
    assert!(fake.sent() < FLOOD_LIMIT / 2, "{} bytes sent", fake.sent());
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("planshare: paste service error: the review API at http://127.0.0.1:"),
        "{stderr}"
    );
    assert!(
        last.contains("sent an event larger than 1 MiB") && last.contains("a planshare server?"),
        "{stderr}"
    );
    assert!(!stderr.contains("reconnecting"), "{stderr}");
}

/// A writer's name with a bidi override and a zero-width space: the server
/// refuses it (names take no invisible formatting characters); only a
/// hostile server (`hostile_frames`) sends such names.
const HIDDEN_NAME: &str = "al\u{202E}ice\u{200B}";
/// Comment text with all of it: ESC, the 8-bit CSI, an override (and its
/// pop), a zero-width space.
const HIDDEN_TEXT: &str = "add \u{1b}[31mrate\u{9b}0m \u{202E}gnitimil\u{202C} li\u{200B}mits";
/// What a terminal gets of it.
const SHOWN_TEXT: &str = "add [31mrate0m gnitimil limits";

/// The characters of the names and texts above that must not reach a
/// terminal.
const HIDDEN: [char; 6] = [
    '\u{1b}', '\u{9b}', '\u{202E}', '\u{202C}', '\u{200B}', '\u{FEFF}',
];

fn assert_shown_clean(text: &str, what: &str) {
    let found: Vec<char> = text
        .chars()
        .filter(|&c| HIDDEN.contains(&c) || (c.is_control() && c != '\n' && c != '\t'))
        .collect();
    assert!(found.is_empty(), "{what} prints {found:?}: {text:?}");
}

/// Frames of a hostile review API: a writer whose name carries ESC, the
/// 8-bit CSI, an override and a zero-width space comments, its link is
/// revoked, and the review is deleted.
fn hostile_frames() -> String {
    // ESC escaped (JSON needs it), the rest raw.
    let name = "\\u001b[31mal\u{202E}ice\u{200B}\u{9b}";
    format!(
        "retry: 2000\n\nid: 1\nevent: comments\ndata: {{\"writer\":\"abcdefgh\",\"name\":\"{name}\",\"version\":1,\"withdrawn\":false}}\n\nid: 2\nevent: revoked\ndata: {{\"link\":\"abcdefgh\"}}\n\nid: 3\nevent: closed\ndata: {{\"reason\":\"deleted\"}}\n\n"
    )
}

#[tokio::test]
async fn watch_prints_names_without_controls_or_invisible_characters() {
    let fake = FakeReview::start(Events::Frames(hostile_frames())).await;
    let (code, stdout, stderr) = Watch::spawn(&fake.link, &[]).finish().await;
    assert_eq!(code, 16, "{stderr}");
    assert_eq!(stdout, "");
    assert_shown_clean(&stderr, "watch");
    assert!(stderr.contains("[31malice commented on v1\n"), "{stderr}");
    assert!(
        stderr.contains("[31malice's link was revoked\n"),
        "{stderr}"
    );
    assert!(stderr.contains("the review was deleted"), "{stderr}");
}

#[tokio::test]
async fn hidden_characters_from_a_review_stay_off_the_terminal() {
    let app = TestApp::spawn(&[]).await;
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let hidden_plan =
        format!("{PLAN}\n## Step 3\n\n\u{FEFF}Check \u{202E}nimda\u{202C} rights.\u{200B}\n");
    let plan = write(&dir, "plan.md", &hidden_plan);
    let (owner, reviewer, _) = start(&env, &plan).await;
    let parsed = parse_review_link(&reviewer).unwrap();
    let refused = reqwest::Client::new()
        .put(format!(
            "{}/api/v1/reviews/{}/comments",
            app.base_url, parsed.id
        ))
        .bearer_auth(parsed.token.unwrap())
        .json(&json!({ "name": HIDDEN_NAME, "version": 1, "data": "AAAA" }))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 422, "a name with hidden characters");
    comment(
        &app.base_url,
        &reviewer,
        "alice",
        json!([["C", "auth middleware", HIDDEN_TEXT, null, null]]),
    )
    .await;
    let feedback = write(&dir, "feedback.txt", &format!("{HIDDEN_TEXT}\n"));
    let decided = planshare(
        &[
            "review",
            "decide",
            &owner,
            "--approve",
            "--feedback",
            &feedback,
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(decided.code, 0, "{}", decided.stderr);

    // Text output: the plan, the comments and the names, cleaned.
    let markdown = planshare(&["open", &reviewer, "--format", "markdown"], &env, "").await;
    assert_eq!(markdown.code, 0, "{}", markdown.stderr);
    assert_shown_clean(&markdown.stdout, "open --format markdown");
    assert!(
        markdown.stdout.contains("\nCheck nimda rights.\n"),
        "{}",
        markdown.stdout
    );
    let open = planshare(&["open", &reviewer], &env, "").await;
    assert_eq!(open.code, 0, "{}", open.stderr);
    assert_shown_clean(&open.stdout, "open");
    // Once as an open thread, once as the decision, once in the plan's
    // feedback.
    assert_eq!(
        open.stdout.matches(SHOWN_TEXT).count(),
        3,
        "{}",
        open.stdout
    );
    let links = planshare(&["review", "links", &owner], &env, "").await;
    assert_eq!(links.code, 0, "{}", links.stderr);
    assert_shown_clean(&links.stdout, "review links");
    assert!(links.stdout.ends_with("  alice\n"), "{}", links.stdout);
    let watch = planshare(&["review", "watch", &reviewer], &env, "").await;
    assert_eq!(watch.code, 0, "{}", watch.stderr);
    assert_shown_clean(&watch.stdout, "watch");
    assert_shown_clean(&watch.stderr, "watch");
    assert_eq!(watch.stdout, open.stdout);

    // JSON: every such character escaped, and the text exactly as written.
    let json = planshare(&["open", &reviewer, "--format", "json"], &env, "").await;
    assert_eq!(json.code, 0, "{}", json.stderr);
    assert_shown_clean(&json.stdout, "open --format json");
    assert!(json.stdout.contains(r"\u202e"), "{}", json.stdout);
    let opened: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(opened["plan"], hidden_plan.as_str());
    assert_eq!(opened["annotations"][0]["text"], HIDDEN_TEXT);
    assert_eq!(opened["annotations"][0]["author"], "alice");
    assert_eq!(opened["annotations"][1]["text"], HIDDEN_TEXT);
    let watch = planshare(&["review", "watch", &reviewer, "--json"], &env, "").await;
    assert_eq!(watch.code, 0, "{}", watch.stderr);
    assert_shown_clean(&watch.stdout, "watch --json");
    let decision: Value = serde_json::from_str(&watch.stdout).unwrap();
    assert_eq!(decision["event"], "decision");
    assert_eq!(decision["feedback"], open.stdout.as_str());
}

#[tokio::test]
async fn watch_json_escapes_controls_and_invisible_characters() {
    let fake = FakeReview::start(Events::Frames(hostile_frames())).await;
    let (code, stdout, stderr) = Watch::spawn_with(&fake.link, &["--json"], &[])
        .finish()
        .await;
    assert_eq!(code, 16, "{stderr}");
    assert_shown_clean(&stdout, "watch --json");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(lines[0]["event"], "comments");
    assert_eq!(
        lines[0]["data"]["name"],
        "\u{1b}[31mal\u{202E}ice\u{200B}\u{9b}"
    );
    assert_eq!(lines[1]["event"], "revoked");
    assert_eq!(lines[2]["data"]["reason"], "deleted");
    for escape in [r"\u001b", r"\u202e", r"\u200b", r"\u009b"] {
        assert!(stdout.contains(escape), "{escape} not in {stdout}");
    }
}

/// `link` with another key (the same token and API): a link whose `key=`
/// was damaged into another valid-looking key.
fn with_other_key(link: &str) -> String {
    let parsed = parse_review_link(link).unwrap();
    let portal = link.split("/r/").next().unwrap();
    share_codec::review_url(
        portal,
        &parsed.id,
        &ShareKey::from_bytes([0x5a; 32]),
        parsed.token.as_deref().unwrap(),
        parsed.api.as_deref(),
    )
}

/// `link` with its token's first character changed (still 43 base64url
/// characters): a mistyped token.
fn with_mistyped_token(link: &str) -> String {
    let parsed = parse_review_link(link).unwrap();
    let token = parsed.token.unwrap();
    let swapped = if token.starts_with('A') { "B" } else { "A" };
    link.replace(
        &format!("&t={token}"),
        &format!("&t={swapped}{}", &token[1..]),
    )
}

#[tokio::test]
async fn commands_check_the_link_before_acting_or_waiting() {
    let app = TestApp::spawn(&[]).await;
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let (owner, reviewer, _) = start(&env, &plan).await;
    let id = parse_review_link(&owner).unwrap().id;
    let mut secrets = secrets(&owner);
    secrets.extend(self::secrets(&reviewer));
    let damaged_key = format!(
        "planshare: the key in this link does not open review {id}'s plan: the link is damaged; copy it again\n"
    );
    let refused = format!(
        "planshare: this link's token is not valid for review {id} (mistyped or revoked), or the review no longer exists\n"
    );

    // `watch` answers at once instead of waiting forever or saying the
    // review was closed.
    for (link, code, message) in [
        (with_other_key(&reviewer), 5, &damaged_key),
        (with_other_key(&owner), 5, &damaged_key),
        (with_mistyped_token(&reviewer), 6, &refused),
    ] {
        let run = planshare(&["review", "watch", &link], &env, "").await;
        assert_eq!(run.code, code, "{}", run.stderr);
        assert_eq!(&run.stderr, message);
        assert_eq!(run.stdout, "");
        let json = planshare(&["review", "watch", &link, "--json"], &env, "").await;
        assert_eq!(json.code, code, "{}", json.stderr);
        assert_eq!(json.stdout, "");
    }

    // The owner's commands that encrypt with the key, or mint links with
    // it, refuse a key that does not open the review; nothing is changed.
    let bad_owner = with_other_key(&owner);
    let v2 = write(&dir, "v2.md", &format!("{PLAN}\n## Step 3\n\nDeploy.\n"));
    let feedback = write(&dir, "feedback.txt", "Split step 2.\n");
    for args in [
        vec![
            "review",
            "push",
            v2.as_str(),
            "--review",
            bad_owner.as_str(),
        ],
        vec!["review", "links", bad_owner.as_str(), "--add"],
        vec![
            "review",
            "decide",
            bad_owner.as_str(),
            "--request-changes",
            "--feedback",
            feedback.as_str(),
        ],
        vec!["open", bad_owner.as_str()],
    ] {
        let run = planshare(&args, &env, "").await;
        assert_eq!(run.code, 5, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr, damaged_key, "{args:?}");
        assert_no_secret(&run.stderr, &secrets, "a damaged link's command");
    }
    let bad_token = with_mistyped_token(&owner);
    for args in [
        vec![
            "review",
            "push",
            v2.as_str(),
            "--review",
            bad_token.as_str(),
        ],
        vec!["review", "links", bad_token.as_str()],
        vec!["review", "decide", bad_token.as_str(), "--approve"],
        vec!["open", bad_token.as_str()],
    ] {
        let run = planshare(&args, &env, "").await;
        assert_eq!(run.code, 6, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr, refused, "{args:?}");
    }
    let listed = planshare(&["review", "links", &owner], &env, "").await;
    assert_eq!(listed.stdout.lines().count(), 1, "no link was added");
    let read = planshare(&["open", &owner, "--format", "json"], &env, "").await;
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert!(
        read.stdout.contains("\"annotations\": []"),
        "{}",
        read.stdout
    );

    // A revoked link is refused up front as well (not "closed"), while a
    // watcher already following it is told its link was revoked (16).
    let reviewer_id = listed.stdout.split_whitespace().next().unwrap().to_owned();
    let revoked = planshare(
        &["review", "links", &owner, "--revoke", &reviewer_id],
        &env,
        "",
    )
    .await;
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    let run = planshare(&["review", "watch", &reviewer], &env, "").await;
    assert_eq!((run.code, run.stderr.as_str()), (6, refused.as_str()));
    app.shutdown().await.unwrap();
}

#[tokio::test]
async fn start_and_links_say_when_the_review_expires_and_name_the_link_ids() {
    let app = TestApp::spawn(&[]).await;
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;

    let text = planshare(
        &["review", "start", &plan, "--ttl", "7d", "--links", "2"],
        &env,
        "",
    )
    .await;
    assert_eq!(text.code, 0, "{}", text.stderr);
    let first = text.stdout.lines().next().unwrap();
    assert!(first.starts_with("Review "), "{first}");
    assert!(
        first.contains(" (version 1), expires 20") && first.ends_with(" UTC (in 7 days)"),
        "{first}"
    );

    let run = planshare(
        &[
            "review", "start", &plan, "--ttl", "3d", "--links", "2", "--json",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    let expires = out["expiresAt"].as_u64().unwrap();
    let three_days = 3 * 86_400_000;
    assert!(
        expires >= now + three_days - 60_000 && expires <= now + three_days + 60_000,
        "{expires} vs {now}"
    );
    let links = out["links"].as_array().unwrap();
    assert_eq!(links.len(), 2);
    // The existing fields stay, and agree with the new ones.
    for (link, reviewer) in links.iter().zip(out["reviewers"].as_array().unwrap()) {
        assert_eq!(&link["url"], reviewer);
    }
    let owner = out["owner"].as_str().unwrap();

    // `review links`: the expiry on stderr, the ids on stdout, and JSON.
    let listed = planshare(&["review", "links", owner], &env, "").await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stderr.contains("expires 20") && listed.stderr.contains("UTC (in 3 days)"),
        "{}",
        listed.stderr
    );
    let json = planshare(&["review", "links", owner, "--json"], &env, "").await;
    assert_eq!(json.code, 0, "{}", json.stderr);
    let listed_json: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(listed_json["expiresAt"].as_u64(), Some(expires));
    assert_eq!(listed_json["links"][1]["id"], links[1]["id"]);

    // The id from `start --json` revokes without guessing.
    let id = links[1]["id"].as_str().unwrap();
    let revoked = planshare(&["review", "links", owner, "--revoke", id], &env, "").await;
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    let after = planshare(&["review", "links", owner], &env, "").await;
    assert_eq!(after.stdout.lines().count(), 1, "{}", after.stdout);
    assert!(!after.stdout.contains(id), "{}", after.stdout);
    app.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_review_export_names_writers_and_the_decider_and_skips_removals_already_made() {
    let app = TestApp::spawn(&[]).await;
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let v1 = format!("{PLAN}\n## Step 3\n\nDrop the old tables.\n");
    let plan = write(&dir, "plan.md", &v1);
    let (owner, reviewer, _) = start(&env, &plan).await;
    // alice asks, on v1, to remove step 3's text and comments on step 1.
    comment(
        &app.base_url,
        &reviewer,
        "alice",
        json!([
            ["D", "Drop the old tables.", null, null],
            ["C", "auth middleware", "add rate limiting", null, null]
        ]),
    )
    .await;
    // The owner (bob) pushes v2 without that text, and comments on it.
    let v2 = write(&dir, "v2.md", PLAN);
    let pushed = planshare(&["review", "push", &v2, "--review", &owner], &env, "").await;
    assert_eq!(pushed.stdout, "v2\n", "{}", pushed.stderr);
    comment_on(
        &app.base_url,
        &owner,
        "bob",
        2,
        json!([[
            "C",
            "Write the migration.",
            "keep it reversible",
            null,
            null
        ]]),
    )
    .await;
    // The decision's feedback repeats bob's own comment, as the portal
    // sends a decider's comments with the decision: the export says it once.
    let feedback = write(
        &dir,
        "feedback.json",
        r#"[{"type":"COMMENT","originalText":"Write the migration.","text":"keep it reversible"},
            {"type":"GLOBAL_COMMENT","text":"Split step 2 into two."}]"#,
    );
    let decided = planshare(
        &[
            "review",
            "decide",
            &owner,
            "--request-changes",
            "--feedback",
            &feedback,
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(decided.code, 0, "{}", decided.stderr);

    let open = planshare(&["open", &reviewer], &env, "").await;
    assert_eq!(open.code, 0, "{}", open.stderr);
    let export = open.stdout.as_str();
    // The open threads first, then the decision, then the plan's feedback.
    assert!(export.starts_with("## Open threads (3)\n"), "{export}");
    assert!(
        export.contains(
            "\n\nDecision by the owner (bob): changes requested\n> Split step 2 into two.\n\n# Plan Feedback\n\nI've reviewed this plan and have 2 pieces of feedback:\n\n"
        ),
        "{export}"
    );
    assert!(
        export
            .contains("Feedback on: \"auth middleware\"\n> add rate limiting\nWritten by alice\n"),
        "{export}"
    );
    assert!(
        export.contains(
            "Feedback on: \"Write the migration.\"\n> keep it reversible\nWritten by the owner (bob)\n"
        ),
        "{export}"
    );
    assert!(!export.contains("with the decision"), "{export}");
    // The removal alice asked for is done: listed, not asked for again.
    assert!(!export.contains("Remove this"), "{export}");
    assert!(
        export.ends_with(
            "## Already removed\n\nThese removals were asked for on an earlier version; their text is no longer in the latest version (v2), so there is nothing to do for them:\n\n- Asked by alice on v1:\n```\nDrop the old tables.\n```\n"
        ),
        "{export}"
    );
    // Nothing is reported missing: stderr says only the rounds.
    assert_eq!(
        open.stderr, "Rounds:\n- Round 1: changes requested on v2 by the owner (bob)\n",
        "nothing is reported missing"
    );

    // `watch` prints the same export, and says who decided.
    let watch = planshare(&["review", "watch", &owner], &env, "").await;
    assert_eq!(watch.code, 15, "{}", watch.stderr);
    assert_eq!(watch.stdout, open.stdout);
    assert!(
        watch
            .stderr
            .contains("round 1: changes requested on v2 by the owner (bob)"),
        "{}",
        watch.stderr
    );
    // JSON keeps each writer's name as the author.
    let json = planshare(&["open", &reviewer, "--format", "json"], &env, "").await;
    let opened: Value = serde_json::from_str(&json.stdout).unwrap();
    let mut authors: Vec<&str> = opened["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["author"].as_str().unwrap())
        .collect();
    authors.sort_unstable();
    assert_eq!(authors, ["alice", "alice", "bob", "bob"]);
    app.shutdown().await.unwrap();
}

/// A plain share link's export is upstream's, without any of the review's
/// additions.
#[tokio::test]
async fn a_share_links_export_names_no_writer() {
    let dir = tempfile::tempdir().unwrap();
    let annotations = write(
        &dir,
        "a.json",
        r#"[["C","auth middleware","add rate limiting","alice",null],["D","Write the migration.","alice",null]]"#,
    );
    let env = [("PLANNOTATOR_SHARE_URL", "https://portal.example")];
    let shared = planshare(
        &["share", "-", "--hash", "--annotations", &annotations],
        &env,
        PLAN,
    )
    .await;
    assert_eq!(shared.code, 0, "{}", shared.stderr);
    let open = planshare(&["open", shared.stdout.trim_end()], &[], "").await;
    assert_eq!(open.code, 0, "{}", open.stderr);
    assert_eq!(
        open.stdout,
        "# Plan Feedback\n\nI've reviewed this plan and have 2 pieces of feedback:\n\n## 1. (line 5) Feedback on: \"auth middleware\"\n> add rate limiting\n\n## 2. (line 9) Remove this\n```\nWrite the migration.\n```\n> I don't want this in the plan.\n\n---\n"
    );
}

/// The loop from the CLI: changes requested on v1, a revision opens round
/// 2, an approver link approves exactly v2 (a decision on a version that is
/// no longer the latest is refused), a progress push keeps the approval and
/// a push that changes more is refused as progress and voids it otherwise.
#[tokio::test]
async fn rounds_approvers_and_progress_pushes_from_the_cli() {
    let app = TestApp::spawn(&[]).await;
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let tasks = "# Plan\n\n- [ ] write the migration\n- [ ] deploy\n";
    let plan = write(&dir, "plan.md", tasks);
    let (owner, _, _) = start(&env, &plan).await;

    let decided = planshare(&["review", "decide", &owner, "--request-changes"], &env, "").await;
    assert_eq!(
        (decided.code, decided.stdout.as_str()),
        (0, "changes requested v1 (round 1)\n"),
        "{}",
        decided.stderr
    );
    let revised = write(&dir, "v2.md", &format!("{tasks}- [ ] tell the team\n"));
    let pushed = planshare(&["review", "push", &revised, "--review", &owner], &env, "").await;
    assert_eq!(
        (pushed.code, pushed.stdout.as_str()),
        (0, "v2, round 2\n"),
        "{}",
        pushed.stderr
    );

    let added = planshare(
        &["review", "links", &owner, "--add", "--approver", "--json"],
        &env,
        "",
    )
    .await;
    assert_eq!(added.code, 0, "{}", added.stderr);
    let added: Value = serde_json::from_str(&added.stdout).unwrap();
    assert_eq!(added["role"], "approver");
    let approver = added["url"].as_str().unwrap().to_owned();

    // Ann read v1 and approves it: refused, v2 is the latest.
    let stale = planshare(
        &[
            "review",
            "decide",
            &approver,
            "--approve",
            "--version",
            "1",
            "--name",
            "Ann",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(stale.code, 14, "{}", stale.stderr);
    assert!(stale.stderr.contains("version 2"), "{}", stale.stderr);
    let approved = planshare(
        &[
            "review",
            "decide",
            &approver,
            "--approve",
            "--version",
            "2",
            "--name",
            "Ann",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(
        (approved.code, approved.stdout.as_str()),
        (0, "approved v2 (round 2)\n"),
        "{}",
        approved.stderr
    );

    // Ticking a box is progress: still approved.
    let ticked = write(
        &dir,
        "v3.md",
        "# Plan\n\n- [x] write the migration\n- [ ] deploy\n- [ ] tell the team\n",
    );
    let progress = planshare(
        &["review", "push", &ticked, "--review", &owner, "--progress"],
        &env,
        "",
    )
    .await;
    assert_eq!(
        (progress.code, progress.stdout.as_str()),
        (0, "v3, progress: still approved\n"),
        "{}",
        progress.stderr
    );
    // More than a tick is not, and is refused before anything is sent.
    let edited = write(
        &dir,
        "v4.md",
        "# Plan\n\n- [x] write the migration\n- [x] deploy to staging\n- [ ] tell the team\n",
    );
    let claimed = planshare(
        &["review", "push", &edited, "--review", &owner, "--progress"],
        &env,
        "",
    )
    .await;
    assert_eq!(claimed.code, 9, "{}", claimed.stderr);
    assert!(
        claimed.stderr.contains("more than checklist marks"),
        "{}",
        claimed.stderr
    );
    let voiding = planshare(&["review", "push", &edited, "--review", &owner], &env, "").await;
    assert_eq!(
        (voiding.code, voiding.stdout.as_str()),
        (0, "v4, round 3: the approval of round 2 is void\n"),
        "{}",
        voiding.stderr
    );
    // `open` says the rounds on stderr (stdout stays the export): who
    // decided what on which version, the voided approval, and the round
    // waiting now.
    let opened = planshare(&["open", &approver], &env, "").await;
    assert_eq!(opened.code, 0, "{}", opened.stderr);
    assert!(
        opened.stderr.contains(
            "Rounds:\n\
             - Round 1: changes requested on v1 by the owner\n\
             - Round 2: approved on v2 by the approver (Ann) (voided by the push of v4)\n\
             - Round 3: open, waiting for a decision on v4\n"
        ),
        "{}",
        opened.stderr
    );
    assert!(!opened.stdout.contains("Rounds:"), "{}", opened.stdout);
    let listed = planshare(&["review", "links", &owner, "--json"], &env, "").await;
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    let roles: Vec<&str> = listed["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["reviewer", "approver"]);
}

/// Threads from the CLI: a reviewer starts one, the owner replies and marks
/// it addressed, another reviewer may not resolve it (exit 12), its author
/// does; `threads --json` gives the shape the spec names; the export lists
/// open threads first. A set written before threads (no ids) still shows
/// its comments as threads.
#[tokio::test]
async fn threads_are_started_answered_and_resolved_from_the_cli() {
    let app = TestApp::spawn(&[]).await;
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let (owner, alice, _) = start(&env, &plan).await;
    let bob = {
        let added = planshare(&["review", "links", &owner, "--add", "--json"], &env, "").await;
        let added: Value = serde_json::from_str(&added.stdout).unwrap();
        added["url"].as_str().unwrap().to_owned()
    };
    // An older client's set: no ids.
    comment(
        &app.base_url,
        &bob,
        "bob",
        json!([["C", "auth middleware", "older note", null, null]]),
    )
    .await;

    let started = planshare(
        &[
            "review",
            "comment",
            &alice,
            "--text",
            "What did the load test show?",
            "--on",
            "auth middleware",
            "--name",
            "alice",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(started.code, 0, "{}", started.stderr);
    let thread = started.stdout.trim().to_owned();
    assert!(plan_doc::is_thread_id(&thread), "{thread:?}");

    let nameless = planshare(
        &["review", "reply", &owner, &thread, "--text", "p99 40 ms"],
        &env,
        "",
    )
    .await;
    assert_eq!(
        nameless.code, 2,
        "the owner has no name yet: {}",
        nameless.stderr
    );
    let replied = planshare(
        &[
            "review",
            "reply",
            &owner,
            &thread,
            "--text",
            "p99 of 40 ms",
            "--addressed",
            "--name",
            "Olga",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(replied.code, 0, "{}", replied.stderr);
    let not_owner = planshare(
        &[
            "review",
            "reply",
            &alice,
            &thread,
            "--text",
            "ok",
            "--addressed",
        ],
        &env,
        "",
    )
    .await;
    assert_eq!(not_owner.code, 2, "{}", not_owner.stderr);

    // Bob may not resolve Alice's thread; Alice may.
    let forged = planshare(&["review", "resolve", &bob, &thread], &env, "").await;
    assert_eq!(forged.code, 12, "{}", forged.stderr);
    let listed = planshare(&["review", "threads", &bob, "--open", "--json"], &env, "").await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let open: Value = serde_json::from_str(&listed.stdout).unwrap();
    let ours = open
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == thread.as_str())
        .unwrap_or_else(|| panic!("{open}"));
    assert_eq!(
        ours,
        &json!({
            "id": thread, "quote": "auth middleware", "text": "What did the load test show?",
            "author": "alice", "role": "reviewer", "version": 1, "state": "open", "addressed": 1,
            "replies": [{"id": ours["replies"][0]["id"], "author": "Olga", "text": "p99 of 40 ms"}],
        })
    );
    assert!(
        open.as_array()
            .unwrap()
            .iter()
            .any(|t| t["text"] == "older note"),
        "a set without ids still has threads: {open}"
    );

    // The export lists the open threads first.
    let exported = planshare(&["open", &owner, "--format", "feedback"], &env, "").await;
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    assert!(
        exported.stdout.starts_with("## Open threads (2)\n"),
        "{}",
        exported.stdout
    );
    assert!(
        exported
            .stdout
            .contains("  - Olga: p99 of 40 ms (addressed in v1)"),
        "{}",
        exported.stdout
    );

    let as_json = planshare(&["open", &owner, "--format", "json"], &env, "").await;
    let as_json: Value = serde_json::from_str(&as_json.stdout).unwrap();
    assert_eq!(as_json["review"]["round"], 1);
    assert!(
        as_json["review"]["threads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == thread.as_str() && t["replies"][0]["author"] == "Olga"),
        "{as_json}"
    );

    let resolved = planshare(&["review", "resolve", &alice, &thread], &env, "").await;
    assert_eq!(
        (resolved.code, resolved.stdout.as_str()),
        (0, format!("resolved {thread}\n").as_str()),
        "{}",
        resolved.stderr
    );
    let open = planshare(&["review", "threads", &owner, "--open", "--json"], &env, "").await;
    let open: Value = serde_json::from_str(&open.stdout).unwrap();
    assert!(
        open.as_array()
            .unwrap()
            .iter()
            .all(|t| t["id"] != thread.as_str()),
        "{open}"
    );
    let reopened = planshare(&["review", "reopen", &owner, &thread], &env, "").await;
    assert_eq!(reopened.code, 0, "{}", reopened.stderr);
    let all = planshare(&["review", "threads", &owner], &env, "").await;
    assert!(
        all.stdout
            .contains(&format!("{thread}  open · alice (reviewer) on v1")),
        "{}",
        all.stdout
    );
}

/// The keyring: `review start` keeps the review (directory 0700, file
/// 0600); later commands take its id, or a link on standard input (`-`);
/// `review list` shows it without the owner link, and follows `links --add`.
#[tokio::test]
async fn the_keyring_keeps_reviews_for_later_commands() {
    use std::os::unix::fs::PermissionsExt as _;
    let app = TestApp::spawn(&[]).await;
    let data = tempfile::tempdir().unwrap();
    let data_home = data.path().display().to_string();
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
        ("XDG_DATA_HOME", data_home.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let started = planshare(
        &["review", "start", &plan, "--approvers", "1", "--json"],
        &env,
        "",
    )
    .await;
    assert_eq!(started.code, 0, "{}", started.stderr);
    let out: Value = serde_json::from_str(&started.stdout).unwrap();
    let (id, owner) = (out["id"].as_str().unwrap(), out["owner"].as_str().unwrap());
    let secrets = secrets(owner);
    assert_no_secret(&started.stderr, &secrets, "review start's stderr");
    // The links for people carry the key by design; the owner token is
    // listed nowhere.
    let owner_token = vec![secrets[1].clone()];
    assert!(started.stderr.contains("keyring"), "{}", started.stderr);
    let kept_dir = data.path().join("planshare/reviews");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&kept_dir), 0o700);
    let file = kept_dir.join(format!("{id}.json"));
    assert_eq!(mode(&file), 0o600);
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(kept["owner"], owner);

    // The id in place of the owner link; a link on standard input.
    let by_id = planshare(&["review", "links", id, "--add", "--json"], &env, "").await;
    assert_eq!(by_id.code, 0, "{}", by_id.stderr);
    let decided = planshare(
        &["review", "decide", "-", "--request-changes"],
        &env,
        &format!("{owner}\n"),
    )
    .await;
    assert_eq!(
        (decided.code, decided.stdout.as_str()),
        (0, "changes requested v1 (round 1)\n"),
        "{}",
        decided.stderr
    );
    let unknown = planshare(&["review", "threads", "NotKept0001"], &env, "").await;
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown
            .stderr
            .contains("no review NotKept0001 in the keyring"),
        "{}",
        unknown.stderr
    );

    let listed = planshare(&["review", "list", "--json"], &env, "").await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_no_secret(&listed.stdout, &owner_token, "review list");
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    let review = &listed[0];
    assert_eq!(
        (
            &review["id"],
            &review["title"],
            &review["state"],
            &review["round"],
            &review["openThreads"]
        ),
        (
            &json!(id),
            &json!("Plan"),
            &json!("changes_requested"),
            &json!(1),
            &json!(0)
        ),
        "{listed}"
    );
    let roles: Vec<&str> = review["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["reviewer", "approver", "reviewer"], "{listed}");
    let text = planshare(&["review", "list"], &env, "").await;
    assert!(
        text.stdout.starts_with(&format!(
            "{id}  changes requested · round 1 · 0 open threads · Plan\n"
        )),
        "{}",
        text.stdout
    );
    assert_no_secret(&text.stdout, &owner_token, "review list");
}

/// `review wait`: exit 17 when `--timeout` runs out (nothing printed on
/// stdout, the review untouched), then the decision's export and its exit
/// status once the round is decided.
#[tokio::test]
async fn wait_times_out_then_returns_the_decision() {
    let app = TestApp::spawn(&[]).await;
    let data = tempfile::tempdir().unwrap();
    let data_home = data.path().display().to_string();
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
        ("XDG_DATA_HOME", data_home.as_str()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let plan = write(&dir, "plan.md", PLAN);
    let started = planshare(&["review", "start", &plan, "--json"], &env, "").await;
    let out: Value = serde_json::from_str(&started.stdout).unwrap();
    let id = out["id"].as_str().unwrap();
    let waited = planshare(&["review", "wait", id, "--timeout", "1s"], &env, "").await;
    assert_eq!(waited.code, 17, "{}", waited.stderr);
    assert_eq!(waited.stdout, "");
    assert!(
        waited
            .stderr
            .contains(&format!("planshare review wait {id}")),
        "{}",
        waited.stderr
    );
    let decided = planshare(&["review", "decide", id, "--request-changes"], &env, "").await;
    assert_eq!(decided.code, 0, "{}", decided.stderr);
    let waited = planshare(&["review", "wait", id, "--timeout", "30s"], &env, "").await;
    assert_eq!(waited.code, 15, "{}", waited.stderr);
    assert!(
        waited
            .stdout
            .contains("Decision by the owner: changes requested"),
        "{}",
        waited.stdout
    );
    assert!(
        !waited.stderr.contains("watching review"),
        "no event lines: {}",
        waited.stderr
    );
}

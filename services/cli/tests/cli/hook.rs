//! `planshare hook claude-code` fed recorded Claude Code hook inputs
//! (`claude-code/*.json`) against the real server, with the person who
//! decides driven through the CLI (the API) and through the approver's
//! page in headless Chromium.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use share_codec::parse_review_link;
use testkit::TestApp;
use testkit::browser::{harness, run_harness};

use crate::support::planshare;

/// A recorded hook input.
fn input(name: &str) -> String {
    let path = format!(
        "{}/tests/cli/claude-code/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The allow object, exactly as Claude Code reads it.
fn allow() -> Value {
    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
}

/// One hook run in the background: its stderr read line by line.
struct Hook {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Vec<String>,
}

/// The environment of every run: the server, and one keyring.
struct Setup {
    app: TestApp,
    data: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Setup {
    async fn new() -> Setup {
        Setup {
            app: TestApp::spawn(&[]).await,
            data: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("PLANNOTATOR_PASTE_URL".into(), self.app.base_url.clone()),
            ("PLANNOTATOR_SHARE_URL".into(), self.app.base_url.clone()),
            (
                "XDG_DATA_HOME".into(),
                self.data.path().display().to_string(),
            ),
        ]
    }

    /// Starts `planshare hook claude-code args…` with `stdin` (closed
    /// after it), in a session of its own (no terminal to write to).
    fn hook(&self, args: &[&str], stdin: &str) -> Hook {
        let mut child = Command::new("setsid")
            .arg(env!("CARGO_BIN_EXE_planshare"))
            .args(["hook", "claude-code"])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .envs(self.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Hook {
            child,
            lines,
            stderr: Vec::new(),
        }
    }

    /// The CLI as a person (or script) on another machine runs it.
    async fn cli(&self, args: &[&str]) -> crate::support::Run {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        planshare(args, &env, "").await
    }

    /// The keyring's files.
    fn kept(&self) -> Vec<Value> {
        let dir = self.data.path().join("planshare/reviews");
        let mut kept = Vec::new();
        for item in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") && !name.starts_with('.') {
                kept.push(
                    serde_json::from_str(&std::fs::read_to_string(item.path()).unwrap()).unwrap(),
                );
            }
        }
        kept
    }
}

impl Hook {
    /// Reads stderr until a line holds `needle`; panics with what was read
    /// after `within`.
    fn wait_for(&mut self, needle: &str, within: Duration) -> String {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(line) = self.stderr.iter().find(|l| l.contains(needle)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.stderr.push(line),
                Err(_) => panic!("no {needle:?} on the hook's stderr: {:#?}", self.stderr),
            }
        }
    }

    /// The approver link the hook showed.
    fn approver_link(&mut self) -> String {
        let line = self.wait_for(
            "approver (approve or request changes): ",
            Duration::from_secs(30),
        );
        line.rsplit(": ").next().unwrap().trim().to_owned()
    }

    /// Waits for the hook to end: (exit code, stdout, all of stderr).
    async fn end(mut self) -> (i32, String, String) {
        tokio::task::spawn_blocking(move || {
            let mut stdout = String::new();
            self.child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut stdout)
                .unwrap();
            let status = self.child.wait().unwrap();
            while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
                self.stderr.push(line);
            }
            (status.code().unwrap_or(-1), stdout, self.stderr.join("\n"))
        })
        .await
        .unwrap()
    }
}

/// The owner token of the one review kept (it must reach no output).
fn owner_token(kept: &Value) -> String {
    parse_review_link(kept["owner"].as_str().unwrap())
        .unwrap()
        .token
        .unwrap()
}

/// A session's first plan starts a review and the approver requests
/// changes (through the CLI): the hook denies with the feedback. The
/// revised plan is v2 of the same review, round 2, at the same link; the
/// approver approves it on the page: the hook allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_plan_of_a_session_goes_to_one_review_and_the_decision_comes_back() {
    use std::os::unix::fs::PermissionsExt as _;
    let setup = Setup::new().await;
    let mut hook = setup.hook(&[], &input("exit-plan-mode-first.json"));
    let link = hook.approver_link();
    hook.wait_for("v1 (round 1)", Duration::from_secs(5));
    let files = tempfile::tempdir().unwrap();
    let feedback = files.path().join("feedback.txt");
    std::fs::write(&feedback, "Start with one percent for a day.").unwrap();
    let decided = setup
        .cli(&[
            "review",
            "decide",
            &link,
            "--request-changes",
            "--name",
            "Dana",
            "--feedback",
            &feedback.display().to_string(),
        ])
        .await;
    assert_eq!(decided.code, 0, "{}", decided.stderr);
    let (code, stdout, stderr) = hook.end().await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    let decision = &answer["hookSpecificOutput"]["decision"];
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"],
        "PermissionRequest"
    );
    assert_eq!(decision["behavior"], "deny", "{answer}");
    let message = decision["message"].as_str().unwrap();
    assert!(
        message.contains("Changes were requested on v1"),
        "{message}"
    );
    assert!(message.contains("the approver (Dana)"), "{message}");
    assert!(
        message.contains("Start with one percent for a day."),
        "{message}"
    );
    assert!(message.contains("present it again"), "{message}");

    // The keyring holds the review for this session, 0600.
    let kept = setup.kept();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["session"], "0b6f2c1e-7d4a-4c39-9a57-3f1e8d2c9b10");
    let id = kept[0]["id"].as_str().unwrap().to_owned();
    let file = setup
        .data
        .path()
        .join(format!("planshare/reviews/{id}.json"));
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let token = owner_token(&kept[0]);
    assert!(
        !stdout.contains(&token) && !stderr.contains(&token),
        "{stderr}"
    );

    // The revised plan: v2, round 2, the same link.
    let mut hook = setup.hook(&[], &input("exit-plan-mode-revised.json"));
    assert_eq!(hook.approver_link(), link);
    hook.wait_for(
        &format!("v2 (round 2) of review {id}"),
        Duration::from_secs(5),
    );
    match harness() {
        Some((chromium, dir)) => {
            let input = json!({"chromium": chromium, "sessions": [{"url": link, "actions": [
                // Her name is bound to the link since her first decision.
                {"textOf": "#review-state"},
                {"approve": true},
            ]}]});
            let report = run_harness(&dir, "review.mjs", &input).await;
            let page = &report["sessions"][0];
            assert_eq!(page["error"], Value::Null, "{report}");
            assert!(
                page["outputs"][0].as_str().unwrap().contains("v2"),
                "{report}"
            );
        }
        None => {
            let approved = setup.cli(&["review", "decide", &link, "--approve"]).await;
            assert_eq!(approved.code, 0, "{}", approved.stderr);
        }
    }
    let (code, stdout, stderr) = hook.end().await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        allow(),
        "{stdout}"
    );
    assert!(
        !stdout.contains(&token) && !stderr.contains(&token),
        "{stderr}"
    );
    assert_eq!(setup.kept().len(), 1);

    // The review saw both versions, in rounds.
    let threads = setup.cli(&["review", "list", "--json"]).await;
    assert_eq!(threads.code, 0, "{}", threads.stderr);
    let listed: Value = serde_json::from_str(&threads.stdout).unwrap();
    assert_eq!(
        (&listed[0]["id"], &listed[0]["state"], &listed[0]["round"]),
        (&json!(id), &json!("approved"), &json!(2)),
        "{listed}"
    );
    assert!(!threads.stdout.contains(&token));
}

/// A hook killed while waiting (Claude Code restarted, the laptop slept)
/// and run again for the same session finds its review: no second review,
/// the same link, and the decision made meanwhile comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_killed_and_run_again_finds_its_review() {
    let setup = Setup::new().await;
    let mut hook = setup.hook(&[], &input("exit-plan-mode-first.json"));
    let link = hook.approver_link();
    hook.child.kill().unwrap();
    let _ = hook.end().await;
    let approved = setup
        .cli(&["review", "decide", &link, "--approve", "--name", "Dana"])
        .await;
    assert_eq!(approved.code, 0, "{}", approved.stderr);

    let mut again = setup.hook(&[], &input("exit-plan-mode-first.json"));
    assert_eq!(again.approver_link(), link);
    let (code, stdout, stderr) = again.end().await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), allow());
    assert!(stderr.contains("v1 (round 1)"), "{stderr}");
    assert_eq!(setup.kept().len(), 1);
}

/// No decision within `--timeout`: denied, with how to go on; the review
/// stays open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_decision_in_time_denies_with_how_to_go_on() {
    let setup = Setup::new().await;
    let hook = setup.hook(&["--timeout", "2s"], &input("exit-plan-mode-first.json"));
    let (code, stdout, stderr) = hook.end().await;
    assert_eq!(code, 0, "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    let decision = &answer["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny");
    let message = decision["message"].as_str().unwrap();
    assert!(message.contains("No decision arrived"), "{message}");
    assert!(message.contains("within 2s"), "{message}");
    assert!(message.contains("present the plan again"), "{message}");
    let kept = setup.kept();
    let id = kept[0]["id"].as_str().unwrap();
    assert!(
        message.contains(&format!("planshare review wait {id}")),
        "{message}"
    );
    let listed = setup.cli(&["review", "list", "--json"]).await;
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed[0]["state"], "open");
}

/// A review's deadline ends the hook's wait as its timeout does, with its
/// own message; the review stays open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_ends_the_wait_with_its_own_message() {
    let setup = Setup::new().await;
    let hook = setup.hook(
        &["--timeout", "1h", "--deadline", "2s"],
        &input("exit-plan-mode-first.json"),
    );
    let (code, stdout, stderr) = hook.end().await;
    assert_eq!(code, 0, "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    let decision = &answer["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny");
    let message = decision["message"].as_str().unwrap();
    assert!(message.contains("deadline"), "{message}");
    assert!(
        message.contains("passed without a decision on v1"),
        "{message}"
    );
    let listed = setup.cli(&["review", "list", "--json"]).await;
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed[0]["state"], "open");
}

/// Other tools get silence; input that does not read gets a message on
/// stderr, no stdout and a non-zero exit (never an allow); an empty plan
/// is denied with what to do; a 2 MB plan is reviewed like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_tools_bad_input_empty_and_huge_plans() {
    let setup = Setup::new().await;
    let (code, stdout, stderr) = setup.hook(&[], &input("bash.json")).end().await;
    assert_eq!((code, stdout.as_str(), stderr.as_str()), (0, "", ""));

    for bad in [input("truncated.json"), "[]".to_owned(), String::new()] {
        let (code, stdout, stderr) = setup.hook(&[], &bad).end().await;
        assert_eq!(code, 9, "{bad}: {stderr}");
        assert_eq!(stdout, "", "{bad}");
        assert!(stderr.contains("cannot read the hook input"), "{stderr}");
    }

    let (code, stdout, stderr) = setup.hook(&[], &input("empty-plan.json")).end().await;
    assert_eq!(code, 0, "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["decision"]["behavior"], "deny");
    assert!(
        answer["hookSpecificOutput"]["decision"]["message"]
            .as_str()
            .unwrap()
            .contains("The plan is empty")
    );

    // 2 MB of plan that does not compress away: a review holds it, and the
    // approval comes back as for any other.
    let mut noise = vec![0u8; 1024 * 1024];
    getrandom::fill(&mut noise).unwrap();
    let plan = format!(
        "# A very long plan\n\n{}\n",
        noise.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    assert!(plan.len() > 2_000_000);
    let mut huge: Value = serde_json::from_str(&input("exit-plan-mode-first.json")).unwrap();
    huge["session_id"] = json!("9e8d7c6b-huge");
    huge["tool_input"]["plan"] = json!(plan);
    let mut hook = setup.hook(&[], &huge.to_string());
    let link = hook.approver_link();
    let approved = setup
        .cli(&["review", "decide", &link, "--approve", "--name", "Dana"])
        .await;
    assert_eq!(approved.code, 0, "{}", approved.stderr);
    let (code, stdout, stderr) = hook.end().await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), allow());
}

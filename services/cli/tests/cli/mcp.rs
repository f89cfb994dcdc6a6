//! `planshare mcp` driven by the official MCP TypeScript SDK's client
//! (`tests/mcp/client.mjs` under Node) against the real server, with a
//! person acting through the CLI between the agent's calls: the whole
//! review loop, a restarted MCP server going on from the keyring, threads,
//! a deleted review, tool errors, and the owner token in no result and not
//! on stderr.

use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use share_codec::parse_review_link;
use testkit::TestApp;

use crate::support::{Run, planshare};

const PLAN: &str = "## Step 1\n\nAdd auth middleware to all protected routes.\n\n## Step 2\n\nWrite the migration.\n";

const REVISED: &str = "## Step 1\n\nAdd auth middleware to all protected routes.\n\n## Step 2\n\nWrite the migration.\n\n## Step 3\n\nWrite the second migration.\n";

/// The driver's directory, or `None` (skip) when its packages are not
/// installed outside CI; under CI a missing install fails the test.
fn harness() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp"));
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let missing = if !node {
        Some("node".to_owned())
    } else if !dir.join("node_modules/@modelcontextprotocol/sdk").exists() {
        Some(format!(
            "@modelcontextprotocol/sdk (npm ci in {})",
            dir.display()
        ))
    } else {
        None
    };
    match missing {
        None => Some(dir),
        Some(what) if std::env::var_os("CI").is_some() => {
            panic!("{what} is missing under CI: scripts/test installs it")
        }
        Some(what) => {
            #[expect(clippy::print_stderr, reason = "a skipped MCP test says so")]
            {
                eprintln!("skipping: {what} is missing (scripts/test installs it)");
            }
            None
        }
    }
}

/// `client.mjs` as a child process: one JSON step in, one JSON answer out.
struct Driver {
    child: Child,
    stdin: ChildStdin,
    answers: tokio::sync::mpsc::UnboundedReceiver<String>,
    /// Every tool result's text so far, for the "no secret" checks.
    results: String,
}

impl Driver {
    fn spawn(dir: &std::path::Path, home: &std::path::Path) -> Driver {
        let mut child = Command::new("node")
            .arg("client.mjs")
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, answers) = tokio::sync::mpsc::unbounded_channel();
        // A thread reads the answers, so the test's runtime (which also
        // runs the server) never blocks on them.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Driver {
            child,
            stdin,
            answers,
            results: String::new(),
        }
    }

    async fn step(&mut self, step: Value) -> Value {
        writeln!(self.stdin, "{step}").unwrap();
        self.stdin.flush().unwrap();
        let line = tokio::time::timeout(Duration::from_secs(120), self.answers.recv())
            .await
            .unwrap_or_else(|_| panic!("no answer to {step} within 120 s"))
            .unwrap_or_else(|| panic!("the driver ended before answering {step}"));
        serde_json::from_str(&line).unwrap()
    }

    /// Starts `planshare mcp` with exactly `env` (and the SDK's defaults:
    /// HOME, PATH).
    async fn start(&mut self, env: &[(&str, &str)]) {
        let env: serde_json::Map<String, Value> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        let started = self
            .step(json!({
                "op": "start",
                "command": env!("CARGO_BIN_EXE_planshare"),
                "args": ["mcp"],
                "env": env,
            }))
            .await;
        assert!(started["pid"].is_u64(), "{started}");
    }

    /// Calls `tool`; its result (`content`, `structuredContent`, `isError`).
    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self
            .step(json!({ "op": "call", "name": tool, "arguments": arguments }))
            .await;
        let result = answer["result"].clone();
        assert!(result.is_object(), "{tool}: {answer}");
        self.results.push_str(&result.to_string());
        self.results.push('\n');
        result
    }

    /// Calls `tool`, which must succeed; its JSON (the text content, which
    /// must say what the structured content says).
    async fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments).await;
        assert_eq!(result["isError"], json!(false), "{tool}: {result}");
        let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{tool}: the text is not JSON ({e}): {result}"));
        assert_eq!(text, result["structuredContent"], "{tool}");
        text
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn assert_ran(run: &Run, what: &str) {
    assert_eq!(run.code, 0, "{what}: {}{}", run.stdout, run.stderr);
}

/// The review loop as an agent runs it over MCP, with a person deciding
/// and commenting through the CLI: start (the links for people only), an
/// open wait, changes requested with feedback, a new round, an approval
/// that a restarted MCP server still finds (the keyring), a person's
/// thread replied to and resolved by the agent, and a deleted review
/// answered as closed.
#[tokio::test]
async fn an_agent_runs_the_review_loop_over_mcp() {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(dir) = harness() else { return };
    let app = TestApp::spawn(&[]).await;
    let data = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let data_home = data.path().display().to_string();
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANNOTATOR_SHARE_URL", app.base_url.as_str()),
        ("XDG_DATA_HOME", data_home.as_str()),
    ];
    let mut mcp = Driver::spawn(&dir, home.path());
    mcp.start(&env).await;

    // Six tools, each with an input schema naming its arguments.
    let tools = mcp.step(json!({ "op": "list_tools" })).await;
    let tools = tools["tools"].as_array().unwrap();
    let names: BTreeSet<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "start_review",
            "push_version",
            "wait_for_decision",
            "list_threads",
            "reply",
            "resolve"
        ])
    );
    for tool in tools {
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{tool}");
        assert!(tool["description"].as_str().unwrap().len() > 20, "{tool}");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let wanted: &[&str] = match tool["name"].as_str().unwrap() {
            "start_review" => &["plan"],
            "push_version" => &["review", "plan"],
            "wait_for_decision" | "list_threads" => &["review"],
            "reply" => &["review", "thread", "text"],
            _ => &["review", "thread"],
        };
        assert_eq!(required, wanted, "{tool}");
        for name in wanted {
            assert!(schema["properties"][name].is_object(), "{tool}");
        }
    }
    let wait_schema = tools
        .iter()
        .find(|t| t["name"] == "wait_for_decision")
        .unwrap();
    assert!(
        wait_schema["inputSchema"]["properties"]["timeout_s"]["description"]
            .as_str()
            .unwrap()
            .contains("60 s"),
        "{wait_schema}"
    );

    // A review the keyring does not hold: a tool error that says so.
    let unknown = mcp
        .call("list_threads", json!({ "review": "NotKept0001" }))
        .await;
    assert_eq!(unknown["isError"], json!(true), "{unknown}");
    let message = unknown["content"][0]["text"].as_str().unwrap();
    assert!(
        message.starts_with("no review NotKept0001 in the keyring"),
        "{message}"
    );

    // start_review: the id, version 1, round 1, and the links for people.
    let started = mcp
        .ok(
            "start_review",
            json!({ "plan": PLAN, "title": "Auth rollout", "ttl": "2d" }),
        )
        .await;
    let id = started["review"].as_str().unwrap().to_owned();
    assert_eq!(
        (&started["version"], &started["round"]),
        (&json!(1), &json!(1))
    );
    assert!(started["expiresAt"].as_u64().unwrap() > 0, "{started}");
    let links = started["links"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{started}");
    assert_eq!(links[0]["role"], "approver");
    let approver = links[0]["url"].as_str().unwrap().to_owned();
    assert!(approver.contains(&format!("/r/{id}#key=")), "{approver}");

    // The keyring holds the owner link, 0600; its token is nowhere else.
    let file = data.path().join(format!("planshare/reviews/{id}.json"));
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let owner = kept["owner"].as_str().unwrap().to_owned();
    let owner_token = parse_review_link(&owner).unwrap().token.unwrap();
    assert_eq!(owner_token.len(), 43);
    assert!(owner.contains(&format!("&t={owner_token}")), "{owner}");
    assert!(!started.to_string().contains(&owner_token));

    // The title became the plan's heading.
    let shown = planshare(&["review", "list", "--json"], &env, "").await;
    assert_ran(&shown, "review list");
    let listed: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(listed[0]["title"], "Auth rollout", "{listed}");

    // Nobody decided yet: the wait runs out, and says so.
    let waited = mcp
        .ok("wait_for_decision", json!({ "review": id, "timeout_s": 1 }))
        .await;
    assert_eq!(
        (&waited["state"], &waited["version"], &waited["round"]),
        (&json!("open"), &json!(1), &json!(1)),
        "{waited}"
    );

    // The person requests changes with feedback.
    let files = tempfile::tempdir().unwrap();
    let feedback = files.path().join("feedback.txt");
    std::fs::write(&feedback, "Please split the migration into two.\n").unwrap();
    let feedback = feedback.display().to_string();
    let decided = planshare(
        &[
            "review",
            "decide",
            &approver,
            "--request-changes",
            "--name",
            "Dana",
            "--feedback",
            &feedback,
        ],
        &env,
        "",
    )
    .await;
    assert_ran(&decided, "decide --request-changes");
    let waited = mcp
        .ok(
            "wait_for_decision",
            json!({ "review": id, "timeout_s": 30 }),
        )
        .await;
    assert_eq!(
        (
            &waited["state"],
            &waited["version"],
            &waited["round"],
            &waited["by"]
        ),
        (
            &json!("changes_requested"),
            &json!(1),
            &json!(1),
            &json!("the approver (Dana)")
        ),
        "{waited}"
    );
    let export = waited["feedback"].as_str().unwrap();
    assert!(
        export.contains("Please split the migration into two."),
        "{export}"
    );

    // A progress push that changes more than checklist marks is refused.
    let refused = mcp
        .call(
            "push_version",
            json!({ "review": id, "plan": REVISED, "progress": true }),
        )
        .await;
    assert_eq!(refused["isError"], json!(true), "{refused}");
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("more than checklist marks"),
        "{refused}"
    );
    // The revised plan opens round 2.
    let pushed = mcp
        .ok("push_version", json!({ "review": id, "plan": REVISED }))
        .await;
    assert_eq!(
        pushed,
        json!({ "review": id, "version": 2, "round": 2 }),
        "{pushed}"
    );

    // The person approves; the MCP server is killed before it hears of it.
    let approved = planshare(&["review", "decide", &approver, "--approve"], &env, "").await;
    assert_ran(&approved, "decide --approve");
    let killed = mcp.step(json!({ "op": "kill" })).await;
    assert_eq!(killed["killed"], json!(true), "{killed}");
    let stderr = killed["stderr"].as_str().unwrap();
    assert!(
        !stderr.contains(&owner_token),
        "the server's stderr: {stderr}"
    );
    assert!(stderr.contains("keyring"), "{stderr}");
    assert_eq!(killed["errors"], json!([]), "{killed}");

    // A new server knows the review from the keyring alone.
    mcp.start(&env).await;
    let waited = mcp
        .ok(
            "wait_for_decision",
            json!({ "review": id, "timeout_s": 30 }),
        )
        .await;
    assert_eq!(
        (
            &waited["state"],
            &waited["version"],
            &waited["round"],
            &waited["by"]
        ),
        (
            &json!("approved"),
            &json!(2),
            &json!(2),
            &json!("the approver (Dana)")
        ),
        "{waited}"
    );

    // The person starts a thread; the agent lists it, replies, resolves.
    let commented = planshare(
        &[
            "review",
            "comment",
            &approver,
            "--text",
            "Why two migrations?",
            "--on",
            "second migration",
        ],
        &env,
        "",
    )
    .await;
    assert_ran(&commented, "comment");
    let thread = commented.stdout.trim().to_owned();
    let listed = mcp.ok("list_threads", json!({ "review": id })).await;
    let threads = listed["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{listed}");
    let listed_thread = &threads[0];
    assert_eq!(
        (
            &listed_thread["id"],
            &listed_thread["quote"],
            &listed_thread["text"],
            &listed_thread["author"],
            &listed_thread["role"],
            &listed_thread["version"],
            &listed_thread["state"],
            &listed_thread["replies"]
        ),
        (
            &json!(thread),
            &json!("second migration"),
            &json!("Why two migrations?"),
            &json!("Dana"),
            &json!("approver"),
            &json!(2),
            &json!("open"),
            &json!([])
        ),
        "{listed}"
    );
    let replied = mcp
        .ok(
            "reply",
            json!({ "review": id, "thread": thread, "text": "Each locks a different table.", "addressed": true }),
        )
        .await;
    assert_eq!(replied["replied"], json!(true), "{replied}");
    let resolved = mcp
        .ok("resolve", json!({ "review": id, "thread": thread }))
        .await;
    assert_eq!(resolved["state"], "resolved", "{resolved}");
    let open = mcp
        .ok("list_threads", json!({ "review": id, "open_only": true }))
        .await;
    assert_eq!(open["threads"], json!([]), "{open}");

    // The person's CLI sees the reply (under the server's --name) and the
    // resolution.
    let seen = planshare(&["review", "threads", &approver, "--json"], &env, "").await;
    assert_ran(&seen, "review threads");
    let seen: Value = serde_json::from_str(&seen.stdout).unwrap();
    assert_eq!(seen[0]["id"], json!(thread), "{seen}");
    assert_eq!(seen[0]["state"], "resolved", "{seen}");
    assert_eq!(seen[0]["addressed"], json!(2), "{seen}");
    let replies = seen[0]["replies"].as_array().unwrap();
    assert_eq!(replies.len(), 1, "{seen}");
    assert_eq!(
        (&replies[0]["author"], &replies[0]["text"]),
        (&json!("Agent"), &json!("Each locks a different table.")),
        "{seen}"
    );

    // The owner deletes the review: the agent's wait says it is closed.
    let deleted = reqwest::Client::new()
        .delete(format!("{}/api/v1/reviews/{id}", app.base_url))
        .bearer_auth(&owner_token)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let gone = mcp
        .ok("wait_for_decision", json!({ "review": id, "timeout_s": 5 }))
        .await;
    assert_eq!(
        (&gone["review"], &gone["state"]),
        (&json!(id), &json!("closed")),
        "{gone}"
    );
    assert!(gone["reason"].as_str().unwrap().contains("gone"), "{gone}");

    // No result carried the owner link or its token, nor did stderr.
    let closed = mcp.step(json!({ "op": "close" })).await;
    assert_eq!(closed["closed"], json!(true), "{closed}");
    assert_eq!(closed["errors"], json!([]), "{closed}");
    let stderr = closed["stderr"].as_str().unwrap();
    assert!(
        !stderr.contains(&owner_token),
        "the server's stderr: {stderr}"
    );
    assert!(!mcp.results.contains(&owner_token), "{}", mcp.results);
    assert!(!mcp.results.contains(&owner), "{}", mcp.results);
}

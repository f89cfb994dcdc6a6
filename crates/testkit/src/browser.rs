//! Driving headless Chromium from tests: the harness directory
//! (`crates/portal/browser-tests`, node scripts using playwright-core) and
//! a runner that feeds a script JSON on stdin and reads its JSON report.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// Chromium and the harness directory, or `None` (skip) outside CI.
#[must_use]
pub fn harness() -> Option<(PathBuf, PathBuf)> {
    let chromium = std::env::var_os("PLANSHARE_TEST_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../portal/browser-tests"
    ));
    let missing = if !chromium.exists() {
        Some(format!("Chromium ({})", chromium.display()))
    } else if !dir.join("node_modules/playwright-core").exists() {
        Some(format!(
            "playwright-core (npm install in {})",
            dir.display()
        ))
    } else {
        None
    };
    match missing {
        None => Some((chromium, dir)),
        Some(what) if std::env::var_os("CI").is_some() => {
            panic!("{what} is missing under CI: scripts/test installs it")
        }
        Some(what) => {
            #[expect(clippy::print_stderr, reason = "a skipped browser test says so")]
            {
                eprintln!("skipping: {what} is missing (scripts/test installs it)");
            }
            None
        }
    }
}

/// Runs `script` of the harness directory with `input` on stdin and
/// returns its JSON report; panics with the report when the script fails.
pub async fn run_harness(dir: &Path, script: &str, input: &Value) -> Value {
    let dir = dir.to_owned();
    let script = script.to_owned();
    let input = input.to_string();
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("node")
            .arg(&script)
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("node {script}: {e}"));
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .unwrap_or_else(|e| panic!("node {script} stdin: {e}"));
        }
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("node {script}: {e}"))
    })
    .await
    .unwrap_or_else(|e| panic!("harness task: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("harness output ({e}): {stdout}\n{stderr}"));
    assert!(output.status.success(), "{report:#}\n{stderr}");
    report
}

//! `run` from end to end, with and without a baseline build: the runner
//! starts the builds for the `memory` store, seeds and measures them in the
//! order of the rounds, and writes both reports.
//!
//! No planshare binary is built for this: both "builds" are shell scripts
//! that serve this crate's reference server on the port the runner hands
//! them (`PLANSHARE_PORT`), which answers the paste API's create and fetch
//! like planshare does. What is tested is the runner; its phases are a few
//! tenths of a second, so no figure is checked beyond being there.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A stand-in planshare build at `dir/name`: the reference server on
/// `$PLANSHARE_PORT`.
fn stand_in(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    let exe = env!("CARGO_BIN_EXE_planshare-loadtest");
    std::fs::write(
        &path,
        format!("#!/bin/sh\nexec '{exe}' reference --port \"$PLANSHARE_PORT\" --size 1000\n"),
    )?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// Runs `planshare-loadtest run` in `dir` on the memory store with short
/// phases (2 rounds, one size, one concurrency) and `extra` arguments, and
/// returns its JSON and Markdown reports.
fn run(dir: &Path, extra: &[&str]) -> anyhow::Result<(Value, String)> {
    let server = stand_in(dir, "planshare-now")?;
    let out = dir.join("out");
    let targets = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets.toml");
    let output = Command::new(env!("CARGO_BIN_EXE_planshare-loadtest"))
        .current_dir(dir)
        .env("TMPDIR", dir)
        .arg("run")
        .arg("--server-bin")
        .arg(&server)
        .args([
            "--stores",
            "memory",
            "--sizes",
            "1000",
            "--concurrency",
            "2",
        ])
        .args(["--duration", "0.2", "--warmup", "0.05", "--rounds", "2"])
        .args(["--server-env", "PLANSHARE_LOG=info", "--out"])
        .arg(&out)
        .arg("--targets")
        .arg(&targets)
        .args(extra)
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "run failed: {stderr}");
    let mut reports: Vec<PathBuf> = std::fs::read_dir(&out)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    reports.sort();
    let [json, md] = reports.as_slice() else {
        panic!(
            "expected one .json and one .md in {}: {reports:?}",
            out.display()
        );
    };
    assert_eq!(json.extension().and_then(|e| e.to_str()), Some("json"));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(json)?)?;
    let md = std::fs::read_to_string(md)?;
    // The report on stdout is the one written.
    assert_eq!(String::from_utf8_lossy(&output.stdout), md);
    Ok((json, md))
}

/// The `server` of each phase, in the order measured.
fn servers(json: &Value) -> Vec<&str> {
    json["phases"]
        .as_array()
        .map(|phases| phases.iter().filter_map(|p| p["server"].as_str()).collect())
        .unwrap_or_default()
}

#[test]
fn a_run_with_a_baseline_build_measures_and_reports_both() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let baseline = stand_in(dir.path(), "planshare-before")?;
    let baseline_arg = baseline.to_string_lossy().into_owned();
    let (json, md) = run(dir.path(), &["--baseline-bin", &baseline_arg])?;

    assert_eq!(json["baseline_bin"].as_str(), Some(baseline_arg.as_str()));
    assert!(
        json["server_bin"]
            .as_str()
            .is_some_and(|s| s.ends_with("planshare-now")),
        "{json}"
    );
    // Round 1 (create, fetch): the build under test right after the
    // reference; round 2: the baseline.
    let (now, before) = ("planshare", "baseline");
    let round_1 = ["reference", now, before];
    let round_2 = ["reference", before, now];
    let expected: Vec<&str> = [round_1, round_1, round_2, round_2].concat();
    assert_eq!(servers(&json), expected);
    for phase in json["phases"].as_array().into_iter().flatten() {
        assert_eq!(phase["errors"], 0, "{phase}");
        assert!(phase["ok"].as_u64().is_some_and(|ok| ok > 0), "{phase}");
        if phase["server"] != "reference" {
            assert_eq!(phase["store"], "memory", "{phase}");
        }
    }
    let summary = json["summary"].as_array().cloned().unwrap_or_default();
    assert_eq!(summary.len(), 2);
    for entry in &summary {
        let stores = entry["stores"].as_array().cloned().unwrap_or_default();
        assert_eq!(stores.len(), 1, "{entry}");
        let memory = &stores[0];
        assert_eq!(memory["store"], "memory");
        assert_eq!(memory["baseline"]["medians"]["rounds"], 2, "{entry}");
        let throughput = memory["ratio_to_baseline"]["throughput"].as_f64();
        assert!(throughput.is_some_and(|r| r > 0.0), "{entry}");
        assert!(
            memory["ratio_to_baseline"]
                .as_object()
                .is_some_and(|r| r.contains_key("cpu_per_request") && r.contains_key("p99")),
            "{entry}"
        );
    }
    // Memory: one row per process, the baseline's among them.
    let memory_of: Vec<(&str, &str)> = json["memory"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["server"].as_str().unwrap_or("?"),
                m["store"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        memory_of,
        [
            ("planshare", "memory"),
            ("baseline", "memory"),
            ("reference", "-")
        ]
    );
    // The targets were checked (on the build under test only: see the unit
    // tests), and the run's notes carry the server setting.
    assert!(json["targets"]["checks"].is_array(), "{json}");
    assert!(
        json["notes"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|n| n.as_str().is_some_and(|n| n.contains("PLANSHARE_LOG=info"))),
        "{json}"
    );

    assert!(md.contains("and the baseline build `"), "{md}");
    assert!(
        md.contains("| create | 1000 | 2 | planshare/memory |"),
        "{md}"
    );
    assert!(
        md.contains("| create | 1000 | 2 | baseline/memory |"),
        "{md}"
    );
    assert!(md.contains("## planshare / baseline"), "{md}");
    assert!(md.contains("| fetch | 1000 | 2 | memory |"), "{md}");
    assert!(md.contains("| baseline/memory |"), "{md}");
    Ok(())
}

#[test]
fn a_run_without_a_baseline_build_reports_none() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (json, md) = run(dir.path(), &[])?;
    let expected: Vec<&str> = ["reference", "planshare"].repeat(4);
    assert_eq!(servers(&json), expected);
    assert_eq!(json.get("baseline_bin"), None);
    assert_eq!(json["summary"][0]["stores"][0].get("baseline"), None);
    assert_eq!(
        json["summary"][0]["stores"][0].get("ratio_to_baseline"),
        None
    );
    assert!(
        md.contains("| create | 1000 | 2 | planshare/memory |"),
        "{md}"
    );
    // (Not a bare "baseline": paths such as the targets file's may hold it.)
    for absent in [
        "| baseline/memory",
        "planshare / baseline",
        "baseline build",
    ] {
        assert!(!md.contains(absent), "{absent}: {md}");
    }
    Ok(())
}

//! `portal`: how long the share portal takes, in headless Chromium, from
//! navigation to every annotation highlighted, for a large plan (default
//! 200 KB of markdown with 200 annotations), opened as a hash link, as an
//! encrypted short link and as a live review's owner page (the plan as
//! version 1, the annotations as the comment sets of four reviewers) from a
//! running planshare server; and how long a reviewer's comment takes from
//! its PUT's `200` to being painted on that owner page (`--paint-rounds`).
//!
//! The figure is the app's own `planshare:highlighted` performance mark
//! (navigation start → decode, render, sanitise, highlight code, re-find
//! and wrap every annotation). Each run uses a fresh browser context (no
//! cache); the median of `--runs` is reported. Chromium shares the two
//! cores with the server and the node driver; it is a wall-clock figure,
//! for comparing builds on the same machine.

use crate::DEFAULT_SERVER_BIN;
use crate::reviews::api::Api;
use crate::run::{READY_POLL, READY_TIMEOUT, check_server_bin, planshare_command, temp_dir};
use anyhow::{Context as _, bail};
use bytes::Bytes;
use clap::Args;
use loadtests::backend::StoreConfig;
use loadtests::client::Conn;
use loadtests::clock::UtcTime;
use loadtests::payload::Rng;
use loadtests::process::{ServerProcess, free_port};
use loadtests::stats;
use serde_json::{Value, json};
use share_codec::ShareKey;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

#[derive(Debug, Args)]
pub(crate) struct PortalArgs {
    /// The planshare server binary (serves the portal and the paste API).
    #[arg(long, default_value = DEFAULT_SERVER_BIN)]
    server_bin: PathBuf,
    /// Chromium to drive.
    #[arg(long, default_value = "/usr/bin/chromium")]
    chromium: PathBuf,
    /// The node harness folder (with `npm ci` done).
    #[arg(long, default_value = "crates/portal/browser-tests")]
    harness: PathBuf,
    /// Size of the plan's markdown, in KB.
    #[arg(long, default_value_t = 200)]
    plan_kb: usize,
    /// Annotations on the plan (about one in twenty are global comments).
    #[arg(long, default_value_t = 200)]
    annotations: usize,
    /// Page loads per link; the median is reported.
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// Comments PUT, one after the other, while the owner page is open;
    /// the median time from each `200` to its comment painted is reported.
    #[arg(long, default_value_t = 20)]
    paint_rounds: usize,
    /// Also record a CPU profile of the last load of each link into this
    /// folder (`<link>.cpuprofile`, for DevTools), and print where the time
    /// went; profiling slows that load, so read its times with care.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Folder for `portal-<UTC timestamp>.json` and `.md` (created if missing).
    #[arg(long, default_value = "loadtests/results")]
    out: PathBuf,
}

/// A plan of about `kb` KB: sections with paragraphs (each holding a
/// unique marker word), task lists, tables and code blocks. Returns the
/// markdown and the texts annotations can point at (some across inline
/// markup).
fn plan(kb: usize) -> (String, Vec<String>) {
    let words = [
        "cache", "tenant", "quota", "replica", "token", "session", "rollout", "schema", "index",
        "latency", "retry", "budget", "shard", "queue", "flag", "audit", "backup", "deploy",
    ];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut md = String::from("# Platform migration plan\n\n");
    let mut targets = Vec::new();
    let mut section = 0;
    while md.len() < kb * 1000 {
        section += 1;
        let _ = writeln!(md, "## Section {section}\n");
        for p in 0..4 {
            let marker = format!("marker{section}x{p}");
            let mut sentence = String::new();
            for _ in 0..30 {
                sentence.push_str(words[(next() % words.len() as u64) as usize]);
                sentence.push(' ');
            }
            // "<marker> keeps the **<word>** …": plain text, then across a <strong>.
            let bold = words[(next() % words.len() as u64) as usize];
            let _ = writeln!(md, "The {marker} step keeps the **{bold}** {sentence}\n");
            targets.push(format!("{marker} step"));
            targets.push(format!("{marker} step keeps the {bold}"));
        }
        let _ = writeln!(
            md,
            "- [x] move the {section} tenant\n- [ ] verify the {section} quota\n"
        );
        let _ = writeln!(
            md,
            "| step | owner |\n|---|---|\n| s{section} | team {} |\n",
            next() % 9
        );
        if section % 3 == 0 {
            let _ = writeln!(
                md,
                "```rust\nfn step_{section}(x: u32) -> u32 {{\n    x.wrapping_mul({})\n}}\n```\n",
                next() % 1000
            );
        }
    }
    (md, targets)
}

/// The payload: the plan and `count` annotations spread over its targets.
fn payload(markdown: &str, targets: &[String], count: usize) -> Value {
    let step = (targets.len() / count.max(1)).max(1);
    let tuples: Vec<Value> = (0..count)
        .map(|i| {
            let target = &targets[(i * step) % targets.len()];
            match i % 20 {
                0 => json!(["G", format!("overall note {i}"), "Load Tester", null]),
                1..=4 => json!(["D", target, "Load Tester", null]),
                _ => json!(["C", target, format!("comment {i}"), "Load Tester", null]),
            }
        })
        .collect();
    json!({"p": markdown, "a": tuples})
}

/// Reviewers whose comment sets carry the review page's annotations.
const REVIEWERS: usize = 4;

/// `json` sealed as a review blob: deflated and encrypted under `key`
/// with a fresh IV (the IV needs to be unique, not secret, here).
fn seal(key: &ShareKey, rng: &mut Rng, json: &Value) -> String {
    let mut iv = [0u8; share_codec::crypto::IV_LEN];
    for chunk in iv.chunks_mut(8) {
        let bytes = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    share_codec::encrypt_with(key, &iv, &share_codec::compress(&json.to_string()))
}

/// A `PUT …/comments` body: `name`'s comment set on version 1.
fn comment_set(key: &ShareKey, rng: &mut Rng, name: &str, tuples: &[Value]) -> Bytes {
    let data = seal(key, rng, &json!({"v": 1, "a": tuples}));
    Bytes::from(json!({"name": name, "version": 1, "data": data}).to_string())
}

/// The review the owner page is timed on and the paint probe's setup: a
/// review of `markdown` whose annotations are spread over [`REVIEWERS`]
/// comment sets, plus one more reviewer link ("Probe") and the bodies it
/// PUTs, one comment each on a target of the plan.
struct ReviewSetup {
    owner_link: String,
    id: String,
    probe_token: String,
    probe_bodies: Vec<(String, String)>,
}

async fn set_up_review(
    server: &ServerProcess,
    base: &str,
    markdown: &str,
    tuples: &[Value],
    targets: &[String],
    rounds: usize,
) -> anyhow::Result<ReviewSetup> {
    let key = ShareKey::generate().context("making a review key")?;
    let mut rng = Rng::from_entropy(0x9a17);
    let mut api = Api::connect(server.addr()).await?;
    let version = seal(&key, &mut rng, &json!({"p": markdown, "a": []}));
    let review = api
        .create_review_with(&version, &share_codec::plan_digest(&key, markdown))
        .await?;
    for r in 0..REVIEWERS {
        let token = api.mint_link(&review).await?;
        let name = format!("Reviewer {}", r + 1);
        let mine: Vec<Value> = tuples
            .iter()
            .skip(r)
            .step_by(REVIEWERS)
            .map(|t| {
                let mut t = t.clone();
                // Each tuple's author is the set's writer (the page shows the bound name).
                let author = if t[0] == "C" { 3 } else { 2 };
                t[author] = json!(name);
                t
            })
            .collect();
        let body = comment_set(&key, &mut rng, &name, &mine);
        api.put_comments(&review, &token, body).await?;
    }
    let probe_token = api.mint_link(&review).await?;
    let probe_bodies = (0..rounds)
        .map(|i| {
            let text = format!("paint probe {i}");
            let target = &targets[(i * 7 + 3) % targets.len()];
            let body = comment_set(
                &key,
                &mut rng,
                "Probe",
                &[json!(["C", target, text, "Probe", null])],
            );
            (String::from_utf8_lossy(&body).into_owned(), text)
        })
        .collect();
    Ok(ReviewSetup {
        owner_link: share_codec::review_url(base, &review.id, &key, &review.owner, None),
        id: review.id,
        probe_token,
        probe_bodies,
    })
}

pub(crate) async fn portal(args: PortalArgs) -> anyhow::Result<()> {
    check_server_bin(&args.server_bin)?;
    if !args.chromium.is_file() {
        bail!(
            "Chromium `{}` not found (scripts/install-deps installs it)",
            args.chromium.display()
        );
    }
    if !args.harness.join("node_modules/playwright-core").is_dir() {
        bail!(
            "playwright-core is missing: run `npm ci` in {}",
            args.harness.display()
        );
    }
    if args.runs == 0 || args.annotations == 0 {
        bail!("--runs and --annotations must be at least 1");
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let started = UtcTime::now();

    let work_dir = temp_dir()?;
    let port = free_port()?;
    let mut command = planshare_command(&args.server_bin, port, work_dir.path(), &StoreConfig::Fs)?;
    command.env("PASTE_MAX_SIZE", "4194304");
    let mut server = ServerProcess::spawn("planshare-server", command, port)?;
    server.wait_ready(READY_TIMEOUT, READY_POLL).await?;
    let base = format!("http://{}", server.addr());

    let (markdown, targets) = plan(args.plan_kb);
    let share = payload(&markdown, &targets, args.annotations);
    let json = share.to_string();
    let compressed = share_codec::compress(&json);
    let hash_link = share_codec::hash_url(&base, &compressed);
    let (key, data) = share_codec::encrypt(&compressed).context("encrypting the payload")?;
    let mut conn = Conn::connect(server.addr()).await?;
    let reply = conn
        .post_json(
            "/api/paste".parse()?,
            Bytes::from(json!({"data": data}).to_string()),
        )
        .await?;
    if !reply.status.is_success() {
        bail!("storing the short link's paste: HTTP {}", reply.status);
    }
    let created: Value = serde_json::from_slice(&reply.body)?;
    let id = created["id"]
        .as_str()
        .context("no id in the create answer")?;
    let short_link = share_codec::short_url(&base, id, &key, &base);
    eprintln!(
        "plan {} B, {} annotations; hash link {} chars, paste {} chars; {} runs each",
        markdown.len(),
        args.annotations,
        hash_link.len(),
        data.len(),
        args.runs
    );

    let tuples = share["a"].as_array().context("no annotations")?;
    let review = set_up_review(
        &server,
        &base,
        &markdown,
        tuples,
        &targets,
        args.paint_rounds,
    )
    .await?;

    if let Some(dir) = &args.profile {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let profile_dir = args
        .profile
        .as_ref()
        .map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
    let input = json!({
        "chromium": args.chromium,
        "runs": args.runs,
        "profileDir": profile_dir,
        "links": [
            {"name": "hash link", "url": hash_link},
            {"name": "short link", "url": short_link},
            {"name": "review (owner page)", "url": review.owner_link},
        ],
        "paint": {
            "url": review.owner_link,
            "endpoint": format!("{base}/api/v1/reviews/{}/comments", review.id),
            "token": review.probe_token,
            "bodies": review.probe_bodies.iter().map(|(body, text)| json!({"body": body, "text": text})).collect::<Vec<_>>(),
        },
    });
    let harness = args.harness.clone();
    let output = tokio::task::spawn_blocking(move || -> anyhow::Result<std::process::Output> {
        let mut child = Command::new("node")
            .arg("timing.mjs")
            .current_dir(&harness)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting node")?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.to_string().as_bytes())?;
        }
        Ok(child.wait_with_output()?)
    })
    .await??;
    server.terminate(Duration::from_secs(10)).await?;
    let report: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "timing.mjs output: {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })?;
    if !output.status.success() {
        bail!("a page did not finish: {report}");
    }

    let mut md = String::new();
    let _ = writeln!(
        md,
        "# planshare portal — time to highlights — {}\n",
        started.iso()
    );
    let _ = writeln!(
        md,
        "Plan {} B of markdown, {} annotations ({} placeable), headless Chromium, fresh context per load, {} loads per link.\n",
        markdown.len(),
        args.annotations,
        args.annotations - args.annotations.div_ceil(20),
        args.runs
    );
    let _ = writeln!(
        md,
        "| link | highlighted, ms (median) | min–max | painted, ms (median) | DOMContentLoaded ms (median) | highlighted annotations |"
    );
    let _ = writeln!(md, "|---|---:|---|---:|---:|---:|");
    let mut rows = Vec::new();
    for result in report["results"].as_array().context("no results")? {
        let runs = result["runs"].as_array().context("no runs")?;
        let take =
            |field: &str| -> Vec<f64> { runs.iter().filter_map(|r| r[field].as_f64()).collect() };
        let highlighted = take("highlightedMs");
        let loaded = take("domContentLoadedMs");
        let painted = take("paintedMs");
        let (min, max) = highlighted
            .iter()
            .fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        let median = stats::median(&highlighted);
        let _ = writeln!(
            md,
            "| {} | {:.0} | {min:.0}–{max:.0} | {:.0} | {:.0} | {} |",
            result["name"].as_str().unwrap_or("?"),
            median.unwrap_or(f64::NAN),
            stats::median(&painted).unwrap_or(f64::NAN),
            stats::median(&loaded).unwrap_or(f64::NAN),
            runs[0]["marks"]
        );
        rows.push(json!({
            "name": result["name"],
            "median_highlighted_ms": median,
            "median_painted_ms": stats::median(&painted),
            "runs": runs,
        }));
    }
    let paint: Vec<f64> = report["paint"]["latenciesMs"]
        .as_array()
        .context("no paint latencies")?
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    let (lo, hi) = paint.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| {
        (lo.min(*v), hi.max(*v))
    });
    let paint_median = stats::median(&paint);
    let _ = writeln!(
        md,
        "\nA reviewer's comment, PUT → painted on the open owner page (the next frame after it is listed): median {:.0} ms, {lo:.0}–{hi:.0} ms over {} comments.",
        paint_median.unwrap_or(f64::NAN),
        paint.len()
    );
    let out = json!({
        "started_utc": started.iso(),
        "plan_bytes": markdown.len(),
        "annotations": args.annotations,
        "hash_link_chars": hash_link.len(),
        "paste_chars": data.len(),
        "results": rows,
        "paint": {"median_ms": paint_median, "latencies_ms": paint},
    });
    let stem = args.out.join(format!("portal-{}", started.compact()));
    let (md_path, json_path) = (stem.with_extension("md"), stem.with_extension("json"));
    // The share payload every link carried, for a closer look at one step
    // (crates/portal/browser-tests/step-timing.mjs).
    let payload_path = args
        .out
        .join(format!("portal-{}-payload.json", started.compact()));
    std::fs::write(&md_path, &md).with_context(|| format!("writing {}", md_path.display()))?;
    std::fs::write(&json_path, serde_json::to_string_pretty(&out)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    std::fs::write(&payload_path, &json)
        .with_context(|| format!("writing {}", payload_path.display()))?;
    print!("{md}");
    eprintln!(
        "wrote {}, {} and {}",
        md_path.display(),
        json_path.display(),
        payload_path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_set_opens_with_the_review_key_as_the_portal_reads_it() {
        let key = ShareKey::from_bytes([7; 32]);
        let mut rng = Rng::new(1);
        let tuples = [json!([
            "C",
            "marker1x0 step",
            "paint probe 0",
            "Probe",
            null
        ])];
        let body: Value = serde_json::from_slice(&comment_set(&key, &mut rng, "Probe", &tuples))
            .expect("the body is JSON");
        assert_eq!(body["name"], "Probe");
        assert_eq!(body["version"], 1);
        let sealed = body["data"].as_str().expect("data is a string");
        let compressed =
            share_codec::decrypt(sealed, &key.to_base64url()).expect("opens with the key");
        let plain = share_codec::decompress(&compressed, 1 << 20).expect("inflates");
        let opened: Value = serde_json::from_str(&plain).expect("JSON inside");
        assert_eq!(opened, json!({"v": 1, "a": tuples}));
        // Each blob gets an IV of its own.
        let again = seal(&key, &mut rng, &json!({"v": 1, "a": tuples}));
        assert_ne!(&sealed[..16], &again[..16]);
    }
}

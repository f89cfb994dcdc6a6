//! Opening links: every upstream `hash_url` vector opens with its plan
//! text, annotation count and highlights; encrypted and legacy short links
//! made here open too; truncated hashes, wrong keys and absent pastes show
//! upstream's error texts; screenshots of a rendered plan.

use std::path::PathBuf;

use serde_json::{Value, json};
use testkit::TestApp;

use crate::{harness, run_harness};

const HASH_ERROR: &str =
    "Failed to load shared plan — the URL may have been truncated by your browser.";
const SHORT_ERROR: &str = "Failed to load shared plan — the link may be expired or incomplete.";

/// Stores `data` as a paste and returns its id.
async fn store(app: &TestApp, data: &str) -> String {
    let created = app.create_ok(data).await;
    created["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_links_open_in_chromium() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let base = app.base_url.clone();
    let mut links = Vec::new();
    let mut longest = String::new();
    for vector in testkit::upstream_vectors("hash_url") {
        let hash = vector["output"]["hash"].as_str().unwrap().to_owned();
        let payload: Value =
            serde_json::from_str(vector["output"]["json"].as_str().unwrap()).unwrap();
        let plan = payload["p"].as_str().unwrap();
        let heading = plan.lines().next().and_then(|l| l.strip_prefix("# "));
        // Every annotation but global comments and diff ones is re-found.
        let tuples = payload["a"].as_array().unwrap();
        // Each highlight covers its annotation's text (id → originalText).
        let marks: serde_json::Map<String, Value> = tuples
            .iter()
            .enumerate()
            .filter(|(i, t)| t[0] != "G" && payload["d"][*i].is_null())
            .map(|(i, t)| (format!("shared-{i}"), t[1].clone()))
            .collect();
        links.push(json!({
            "url": format!("{base}/#{hash}"),
            "plan": plan,
            "annotations": tuples.len(),
            "highlighted": marks.len(),
            "marks": marks,
            "heading": heading,
        }));
        if hash.len() > longest.len() {
            longest = hash;
        }
    }
    assert!(links.len() >= 8, "the hash_url vectors are there");
    // A truncated hash still looks like a payload but does not decode.
    links.push(json!({
        "url": format!("{base}/#{}", &longest[..longest.len() - 7]),
        "error": HASH_ERROR,
    }));

    let json = r##"{"p":"# Short plan\n\nShip it.","a":[["C","Ship it","Which day?","Ann",null],["G","Looks good","Bo",null]]}"##;
    let compressed = share_codec::compress(json);
    let (key, data) = share_codec::encrypt(&compressed).unwrap();
    let id = store(&app, &data).await;
    let short = share_codec::short_url(&base, &id, &key, share_codec::DEFAULT_PASTE_API);
    links.push(json!({"url": short, "plan": "# Short plan\n\nShip it.", "annotations": 2, "highlighted": 1}));
    let legacy = store(&app, &compressed).await;
    links.push(json!({"url": format!("{base}/p/{legacy}"), "plan": "# Short plan\n\nShip it.", "annotations": 2, "highlighted": 1}));
    let (other_key, _) = share_codec::encrypt("x").unwrap();
    links.push(json!({
        "url": share_codec::short_url(&base, &id, &other_key, share_codec::DEFAULT_PASTE_API),
        "error": SHORT_ERROR,
    }));
    links.push(json!({
        "url": share_codec::short_url(&base, "AbsentPaste12345", &key, share_codec::DEFAULT_PASTE_API),
        "error": SHORT_ERROR,
    }));

    // Markdown with script-capable HTML renders sanitised: no script runs
    // (a dialog would fail the harness), no handler attribute survives.
    //
    // Opening it may still report `script-src-attr` CSP violations (the
    // plan's `onerror` and `onload`; the author's `<img onerror>` enters
    // as text and reports nothing), so this link is marked hostile. They
    // come from the sanitiser's parse step where DOMPurify is the engine
    // (browsers without the Sanitizer API): it parses the markup with
    // `DOMParser.parseFromString`, and Chromium checks `script-src-attr` —
    // and reports — whenever an event-handler attribute is set on an
    // element of a document under this page's CSP, inert ones included.
    // The handler could never run there (no browsing context) and the
    // sanitiser removes it before anything reaches the page, so the report
    // is noise from the second layer, not a bypass of the first.
    // xss.rs checks the rendered result with the sanitiser on (f1_…) and
    // that the CSP alone blocks the same handlers (f2_…).
    let hostile = r##"{"p":"# Hostile\n\n<img src=x onerror=alert(1)> <script>alert(2)</script>\n\n[x](javascript:alert(3)) <svg onload=alert(4)>","a":[["C","Hostile","<b>bold?</b>","<img src=x onerror=alert(5)>",null]]}"##;
    links.push(json!({
        "url": format!("{base}/#{}", share_codec::compress(hostile)),
        "plan": "Hostile x",
        "annotations": 1,
        "highlighted": 1,
        "heading": "Hostile",
        "hostile": true,
    }));
    // Overlapping annotations, one starting where another does, one across
    // a code span, and a duplicate text (the first occurrence wins): each
    // highlight covers exactly its own text.
    let overlapping = json!({"p": "# Overlaps\n\nUse JWT tokens stored in `httpOnly` cookies. JWT tokens again.", "a": [
        ["C", "JWT tokens stored", "a", null, null],
        ["C", "tokens stored in httpOnly", "b", null, null],
        ["D", "JWT", null, null],
        ["C", "httpOnly cookies", "c", null, null],
        ["C", "JWT tokens", "d", null, null],
    ]})
    .to_string();
    links.push(json!({
        "url": format!("{base}/#{}", share_codec::compress(&overlapping)),
        "plan": "Overlaps Use JWT tokens stored in httpOnly cookies JWT tokens again",
        "annotations": 5,
        "highlighted": 5,
        "marks": {
            "shared-0": "JWT tokens stored",
            "shared-1": "tokens stored in httpOnly",
            "shared-2": "JWT",
            "shared-3": "httpOnly cookies",
            "shared-4": "JWT tokens",
        },
    }));
    // Screenshots of a rendered, highlighted plan: light and dark, desktop
    // and phone width, kept under target/portal-screenshots for looking at.
    let shots_dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/portal-screenshots"
    ));
    std::fs::create_dir_all(&shots_dir).unwrap();
    let plan = "# Rollout plan\n\n## Steps\n\n- [x] Ship the **API** behind a flag\n- [ ] Migrate the `sessions` table\n\n> [!NOTE]\n> Keep the old tokens for a week.\n\n| step | owner |\n|---|---|\n| canary | Ann |\n\n```rust\nfn main() { println!(\"hi\"); }\n```\n\nUse JWT tokens stored in httpOnly cookies, then drop the legacy cache layer.";
    let shot_json = json!({"p": plan, "a": [
        ["C", "JWT tokens", "Prefer opaque session ids", "Swift Otter", null],
        ["D", "drop the legacy cache layer", "Bo", null],
        ["C", "sessions", "Which schema?", "Ann", [["/tmp/plannotator/a.png", "a"]]],
        ["G", "Looks good overall", "Cy", null]
    ]})
    .to_string();
    let shot_url = format!("{base}/#{}", share_codec::compress(&shot_json));
    links.push(json!({
        "url": shot_url,
        // The words that render (task markers and the alert marker do not).
        "plan": "Rollout plan Steps Ship the API behind a flag Migrate the sessions table Note \
                 Keep the old tokens for a week step owner canary Ann fn main println hi \
                 Use JWT tokens stored in httpOnly cookies then drop the legacy cache layer",
        "annotations": 4,
        "highlighted": 3,
        "heading": "Rollout plan",
        "alerts": ["Note"],
    }));
    let mut screenshots = Vec::new();
    for (scheme, width, height, name) in [
        ("light", 1280, 800, "desktop-light"),
        ("dark", 1280, 800, "desktop-dark"),
        ("light", 390, 844, "phone-light"),
        ("dark", 390, 844, "phone-dark"),
    ] {
        let path = shots_dir.join(format!("{name}.png"));
        let _ = std::fs::remove_file(&path);
        screenshots.push((path.clone(), json!({
            "url": shot_url, "path": path, "colorScheme": scheme, "width": width, "height": height,
        })));
    }
    let count = links.len();
    let shot_inputs: Vec<Value> = screenshots.iter().map(|(_, v)| v.clone()).collect();
    let input = json!({"chromium": chromium, "links": links, "screenshots": shot_inputs});
    let report = run_harness(&dir, "open-links.mjs", &input).await;
    assert_eq!(report["opened"], count, "{report}");
    for (path, _) in &screenshots {
        let png = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 5_000,
            "{}",
            path.display()
        );
    }
}

//! Copy feedback: the portal's export (`crates/portal/web/plandoc-export.js`) is
//! upstream's `exportAnnotations` (every `export_annotations` vector), its
//! block parser is `plan_doc::parse_blocks` (the hash_url plans, the vector
//! plans and hand-written ones), and the "Copy feedback" button gives what
//! `planshare open --format feedback` prints for the same link.

use std::collections::HashSet;

use plan_doc::AnchorHow;
use serde_json::{Value, json};
use share_codec::{SharePayload, decode_hash};
use testkit::TestApp;

use crate::{harness, run_harness};

/// Plans covering every block kind the parser knows, and its edge cases.
const PLANS: &[(&str, &str)] = &[
    (
        "headings",
        "# Title\n\n## Step *one*\n#no space\n   ### Indented ###\n####### seven\n",
    ),
    (
        "nested and ordered lists",
        "- one\n  - nested **bold**\n    - deeper\n\t- tab\n- two\n  continued\n\n  loose\n\n1. first\n2. second\n10. tenth\n+ not a list\n-no\n",
    ),
    (
        "task lists",
        "- [ ] todo\n- [x] done\n- [X]  shout\n- [y] no\n1. [x] numbered\n",
    ),
    (
        "fenced code",
        "Intro\n```rust\nfn main() {}\n\n  indented\n```\n```\nno language\n```\n````\n```\n````\n~~~py\ntilde\n~~~\n```\nunclosed",
    ),
    (
        "tables",
        "| Key | Value |\n|---|:-:|\n| `ttl` | **15** min \\| max |\n  | indented | row |\nnot table | x\n",
    ),
    (
        "blockquotes",
        "> one\n> two\n\n> three\n> - item\n> tail\n>> nested\n>\n> after empty\n",
    ),
    (
        "github alerts",
        "> [!NOTE]\n> Keep the old tokens.\n> - a list\n\n> [!warning]\n> careful\n\n> [!TIP] inline\n\n> [!IMPORTANT]\n",
    ),
    (
        "html blocks",
        "<details>\n<summary>More &amp; less</summary>\n\nbody\n</details>\nafter\n<img\n  src=x>\n</div>\nx\n\n<div class=\"a\">\n<div>\ninner\n</div>\n</div>\n<kbd>Ctrl</kbd> stays text\n",
    ),
    (
        "rules and directives",
        "text\n\n---\n***\n___\n- - -\n\n:::Note\nbody\nmore\n:::\n:::tip\n:::\n",
    ),
    (
        "math",
        "$$\nx^2\n$$\n$$a$$ tail\n$$100k for infra\n\n\\[\ny\n\\]\n",
    ),
    (
        "crlf",
        "# Title\r\n\r\nFirst line\r\nsecond line\r\n\r\n- item\r\n  more\r\n\r\n```\r\ncode\r\n```\r\n",
    ),
    (
        "inline markup",
        "Use **JWT** tokens for `api/*` routes, see [the guide](https://x.test/g) and <https://x.test>.\nMatch \\*.rs files, _em_, ~~gone~~, ![logo](l.png), [[wiki|page]], $x^2$ and AT&amp;T.\n",
    ),
    (
        "unicode",
        "# Café ☕ plan\n\nEmoji 😀 and 中文 and “curly” quotes — dashes… :rocket:\n\n- ünïcödé item\n",
    ),
    (
        "frontmatter and references",
        "---\ntitle: x\n---\n\n# Plan\n\nSee [docs] and [the api][api].\n\n[docs]: https://docs.test\n[api]: <https://api.test> \"API\"\n",
    ),
    (
        "mixed document",
        "# Rollout plan\n\n## Steps\n\n- [x] Ship the **API** behind a flag\n- [ ] Migrate the `sessions` table\n\n> [!NOTE]\n> Keep the old tokens for a week.\n\n| step | owner |\n|---|---|\n| canary | Ann |\n\n```rust\nfn main() { println!(\"hi\"); }\n```\n\nUse JWT tokens stored in httpOnly cookies, then drop the legacy cache layer.\n",
    ),
    ("empty", ""),
    ("blank lines only", "\n\n  \n"),
];

/// The hand-written plan called `name`.
fn plan(name: &str) -> &'static str {
    PLANS.iter().find(|(n, _)| *n == name).unwrap().1
}

/// Payloads for the end-to-end check: (name, share payload JSON).
fn payloads() -> Vec<(&'static str, Value)> {
    let rollout = plan("mixed document");
    let alerts_and_more = [
        plan("github alerts"),
        plan("tables"),
        plan("html blocks"),
        plan("math"),
        plan("rules and directives"),
    ]
    .join("\n");
    vec![
        (
            "comments, deletions, quick labels, global comment, images",
            json!({"p": rollout, "a": [
                ["C", "JWT tokens", "Prefer opaque session ids", "Swift Otter", null],
                ["D", "drop the legacy cache layer", "Bo", null],
                ["C", "sessions", "Which schema?", "Ann", [["/tmp/plannotator/a.png", "a"]]],
                ["C", "Rollout plan", "Needs tests", null, null, 1],
                ["C", "canary", "Needs tests", "Cy", null, 1],
                ["C", "Keep the old tokens", "Unclear", null, null, 1],
                ["C", "behind a flagMigrate the sessions", "two items as textContent reads them", null, null],
                ["G", "Looks good overall", "Cy", [["/tmp/plannotator/g.png", "g"]]],
            ]}),
        ),
        (
            "text spanning inline markup, not in the plan, across blocks",
            json!({"p": plan("inline markup"), "a": [
                ["C", "Use JWT tokens for api/* routes", "bold and code", null, null],
                ["C", "see the guide and https://x.test", "link and autolink", null, null],
                ["D", "Match *.rs files", null, null],
                ["C", "gone", "strike", null, null],
                ["C", "rate limiting", "not in the plan", null, null],
                ["C", "x.test.\nMatch", "across lines", null, null],
                ["C", "AT&T", "entity", null, null],
            ]}),
        ),
        (
            "diff context, sources and global attachments",
            json!({"p": rollout, "a": [
                ["C", "Ship the API behind a flag", "flag name?", null, null],
                ["D", "removed line", null, null],
                ["C", "Migrate the sessions table", "lint", null, null],
                ["G", "General", null, null],
            ], "g": [["/tmp/plannotator/ref.png", "ref"], "/tmp/old/form.jpg"],
               // A global comment's diff context is ignored (upstream's `fromShareable`).
               "d": [null, "removed", "modified", "added"],
               "s": [null, null, "eslint", null]}),
        ),
        (
            "crlf, unicode, typography and whitespace",
            json!({"p": "# Café ☕ plan\r\n\r\nSay \"hello\" -- wait... it's done :rocket:\r\n\r\n- item one\r\n- item two\r\n\r\nIt’s “done” — really\r\n", "a": [
                ["C", "Say “hello” -- wait… it’s done 🚀", "typeset", null, null],
                ["C", "It's \"done\" --- really", "straight", null, null],
                ["C", "item one\nitem two", "two items", null, null],
                ["C", "Café  ☕", "spaces", null, null],
                ["D", "it's done", null, null],
            ]}),
        ),
        (
            "alerts, tables, html, math, directives",
            json!({"p": alerts_and_more, "a": [
                ["C", "Keep the old tokens.", "alert", null, null],
                ["C", "15 min | max", "cell", null, null],
                ["C", "More & less", "html", null, null],
                ["C", "x^2", "math", null, null],
                ["C", "careful", "warning", null, null],
                ["C", "inner", "nested div", null, null],
            ]}),
        ),
        (
            "duplicates, ordering and older tuple forms",
            json!({"p": "# Plan\n\nAdd auth middleware.\n\nAdd auth middleware again.\n\n```\nconst  x = 1;\n```\n", "a": [
                ["C", "again", "second block", null, null],
                ["C", "Add auth middleware", "first wins", null, null],
                ["C", "const x = 1;", "normalised code", "Ann"],
                ["D", "auth", "Bo"],
                ["C", "Plan", "image strings", null, ["/tmp/a/shot.png", "dir/"]],
            ]}),
        ),
        (
            "no annotations",
            json!({"p": "# Plan\n\nNothing to say.", "a": []}),
        ),
        (
            "global attachments only",
            json!({"p": "# Plan", "a": [], "g": [["/tmp/r.png", "r"]]}),
        ),
    ]
}

/// What `planshare open --format feedback` prints for hash data (the CLI's
/// `render`: plan-doc's reanchor, then the export with upstream's defaults).
fn cli_feedback(hash: &str) -> String {
    let payload: SharePayload = decode_hash(hash, 64 * 1024 * 1024).unwrap();
    let reanchored = plan_doc::reanchor(&payload.plan, &payload.annotations);
    plan_doc::export_annotations(
        &reanchored.blocks,
        &reanchored.annotations,
        &payload.global_attachments,
        plan_doc::DEFAULT_TITLE,
        plan_doc::DEFAULT_SUBJECT,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_module_matches_the_vectors_and_plan_doc() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let vectors = testkit::upstream_vectors("export_annotations");
    assert!(!vectors.is_empty(), "the export vectors are there");
    let mut plans: Vec<(String, String)> = Vec::new();
    for vector in testkit::upstream_vectors("hash_url") {
        let payload: Value =
            serde_json::from_str(vector["output"]["json"].as_str().unwrap()).unwrap();
        let name = format!("hash_url {}", vector["name"].as_str().unwrap());
        plans.push((name, payload["p"].as_str().unwrap().to_owned()));
    }
    for vector in &vectors {
        if let Some(markdown) = vector["input"]["markdown"].as_str() {
            let name = format!("export {}", vector["name"].as_str().unwrap());
            plans.push((name, markdown.to_owned()));
        }
    }
    plans.extend(
        PLANS
            .iter()
            .map(|(n, md)| ((*n).to_owned(), (*md).to_owned())),
    );
    plans.extend(
        payloads()
            .into_iter()
            .map(|(n, p)| (format!("payload {n}"), p["p"].as_str().unwrap().to_owned())),
    );
    let corpus: Vec<Value> = plans
        .iter()
        .map(|(name, markdown)| {
            let blocks = serde_json::to_value(plan_doc::parse_blocks(markdown)).unwrap();
            json!({"name": name, "markdown": markdown, "blocks": blocks})
        })
        .collect();
    let input = json!({
        "chromium": chromium,
        "base": app.base_url,
        "vectors": vectors,
        "corpus": corpus,
    });
    let report = run_harness(&dir, "feedback.mjs", &input).await;
    assert_eq!(report["checked"]["vectors"], vectors.len(), "{report}");
    assert_eq!(report["checked"]["corpus"], corpus.len(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_feedback_gives_the_cli_text() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let mut hashes: Vec<(String, String)> = payloads()
        .into_iter()
        .map(|(name, payload)| (name.to_owned(), share_codec::compress(&payload.to_string())))
        .collect();
    for vector in testkit::upstream_vectors("hash_url") {
        let name = format!("hash_url {}", vector["name"].as_str().unwrap());
        hashes.push((name, vector["output"]["hash"].as_str().unwrap().to_owned()));
    }
    // The payloads reach every step of the re-anchoring search.
    let steps: HashSet<AnchorHow> = hashes
        .iter()
        .flat_map(|(_, hash)| {
            let payload = decode_hash(hash, 64 * 1024 * 1024).unwrap();
            plan_doc::reanchor(&payload.plan, &payload.annotations).anchors
        })
        .flatten()
        .map(|anchor| anchor.how)
        .collect();
    for how in [
        AnchorHow::Exact,
        AnchorHow::Rendered,
        AnchorHow::CrossBlock,
        AnchorHow::Normalized,
        AnchorHow::Transformed,
        AnchorHow::NotFound,
    ] {
        assert!(steps.contains(&how), "no annotation is found by {how:?}");
    }
    let links: Vec<Value> = hashes
        .iter()
        .map(|(name, hash)| {
            json!({
                "name": name,
                "url": format!("{}/#{hash}", app.base_url),
                "expected": cli_feedback(hash),
            })
        })
        .collect();
    let input = json!({"chromium": chromium, "base": app.base_url, "links": links});
    let report = run_harness(&dir, "feedback.mjs", &input).await;
    assert_eq!(report["checked"]["links"], links.len(), "{report}");
    assert_eq!(report["checked"]["copied"], links.len(), "{report}");
}

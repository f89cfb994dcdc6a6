//! `planshare share` and `planshare open`: vectors, round trips against the
//! real server, key confidentiality, and every failure's exit code.

use serde_json::Value;
use share_codec::DEFAULT_MAX_INFLATED_BYTES;
use testkit::TestApp;

use crate::support::{Stub, planshare};

fn vectors(kind: &str) -> Vec<Value> {
    testkit::upstream_vectors(kind)
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The JSON text inside a hash link.
fn hash_json(url: &str) -> String {
    let data = url.split_once("/#").unwrap().1;
    share_codec::decompress(data, DEFAULT_MAX_INFLATED_BYTES).unwrap()
}

#[tokio::test]
async fn share_reproduces_every_hash_url_vector_payload_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = vectors("hash_url");
    assert!(!vectors.is_empty());
    for v in vectors {
        let name = v["name"].as_str().unwrap();
        let plan = write(&dir, "plan.md", v["input"]["markdown"].as_str().unwrap());
        let review = serde_json::json!({
            "annotations": v["input"]["annotations"],
            "globalAttachments": v["input"]["globalAttachments"],
        });
        let annotations = write(&dir, "annotations.json", &review.to_string());
        let base = v["input"]["baseUrl"]
            .as_str()
            .unwrap_or("https://share.plannotator.ai");
        let run = planshare(
            &[
                "share",
                &plan,
                "--annotations",
                &annotations,
                "--hash",
                "--share-url",
                base,
            ],
            &[],
            "",
        )
        .await;
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let url = run.stdout.trim_end();
        assert!(url.starts_with(&format!("{base}/#")), "{name}: {url}");
        assert_eq!(
            hash_json(url),
            v["output"]["json"].as_str().unwrap(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn share_short_then_open_round_trips_through_the_server() {
    let app = TestApp::spawn(&[]).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let plan = "# Plan\n\n## Step 1\n\nAdd auth middleware to all protected routes.\n\n- item one\n- item two\n";
    let annotations = r#"[{"type":"COMMENT","originalText":"auth middleware","text":"rate limit login","author":"Swift Otter","images":[{"path":"/tmp/a.png","name":"a"}]},
        {"type":"DELETION","originalText":"item two"},
        {"type":"GLOBAL_COMMENT","text":"Overall fine"}]"#;
    let dir = tempfile::tempdir().unwrap();
    let ann = write(&dir, "a.json", annotations);
    let run = planshare(
        &["share", "-", "--annotations", &ann, "--short", "--json"],
        &env,
        plan,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out["kind"], "short");
    let url = out["url"].as_str().unwrap();
    let id = out["id"].as_str().unwrap();
    // The server's discovery names its own portal (this origin).
    assert!(
        url.starts_with(&format!("{}/p/{id}#key=", app.base_url)),
        "{url}"
    );
    assert!(
        url.contains("&paste="),
        "a non-default paste API is named in the link: {url}"
    );
    assert_eq!(out["sizeBytes"].as_u64().unwrap() as usize, url.len());
    // The server stores only ciphertext.
    let stored: Value = app.get(id).await.json().await.unwrap();
    assert!(
        !stored["data"].as_str().unwrap().contains("auth"),
        "stored data is encrypted"
    );

    // Open it with no environment at all: the link itself names the paste API.
    let markdown = planshare(&["open", url, "--format", "markdown"], &[], "").await;
    assert_eq!(
        (markdown.code, markdown.stdout.as_str()),
        (0, plan),
        "{}",
        markdown.stderr
    );
    let json = planshare(&["open", url, "--format", "json"], &[], "").await;
    assert_eq!(json.code, 0, "{}", json.stderr);
    let opened: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(opened["annotations"].as_array().unwrap().len(), 3);
    assert_eq!(opened["annotations"][0]["text"], "rate limit login");
    assert_eq!(opened["annotations"][0]["anchor"]["startLine"], 5);
    assert_eq!(opened["annotations"][1]["anchor"]["found"], true);
    assert_eq!(opened["notFound"], 0);
    let feedback = planshare(&["open", url], &[], "").await;
    assert_eq!(feedback.code, 0, "{}", feedback.stderr);
    assert!(
        feedback
            .stdout
            .contains("## 2. (line 5) Feedback on: \"auth middleware\"\n> rate limit login\n"),
        "{}",
        feedback.stdout
    );
}

#[tokio::test]
async fn a_large_plan_with_200_annotations_round_trips() {
    let app = TestApp::spawn(&[]).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let mut plan = String::from("# Big plan\n\n");
    let mut annotations = Vec::new();
    let mut i = 0;
    while plan.len() < 200 * 1024 {
        plan.push_str(&format!("## Step {i}\n\nParagraph {i} explains change number {i} in some detail, with ✓ unicode.\n\n- task {i}a\n- task {i}b\n\n"));
        if annotations.len() < 200 {
            annotations.push(serde_json::json!({"type": "COMMENT", "originalText": format!("change number {i} "), "text": format!("comment {i}"), "author": "r"}));
        }
        i += 1;
    }
    let dir = tempfile::tempdir().unwrap();
    let ann = write(&dir, "a.json", &Value::Array(annotations).to_string());
    let run = planshare(
        &["share", "-", "--annotations", &ann, "--json"],
        &env,
        &plan,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        out["kind"], "short",
        "--auto picks a short link for a long plan"
    );
    let opened = planshare(
        &["open", out["url"].as_str().unwrap(), "--format", "json"],
        &[],
        "",
    )
    .await;
    assert_eq!(opened.code, 0, "{}", opened.stderr);
    let opened: Value = serde_json::from_str(&opened.stdout).unwrap();
    assert_eq!(opened["plan"].as_str().unwrap(), plan);
    let restored = opened["annotations"].as_array().unwrap();
    assert_eq!(restored.len(), 200);
    assert!(restored.iter().all(|a| a["anchor"]["found"] == true));
    assert_eq!(restored[199]["text"], "comment 199");
}

#[tokio::test]
async fn the_key_never_leaves_the_fragment() {
    let stub = Stub::start(vec![], (201, vec![], r#"{"id":"abcdefgh"}"#.to_owned())).await;
    let env = [("PLANNOTATOR_PASTE_URL", stub.url.as_str())];
    let run = planshare(&["share", "-", "--short"], &env, "# Secret plan\n\ndetails").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let url = run.stdout.trim_end().to_owned();
    let key_b64url = url
        .split_once("#key=")
        .unwrap()
        .1
        .split('&')
        .next()
        .unwrap()
        .to_owned();
    let key = share_codec::decode_forgiving(&key_b64url).unwrap();
    let stored = {
        let body: Value = serde_json::from_slice(&created(&stub).body).unwrap();
        body["data"].as_str().unwrap().to_owned()
    };

    // Serve the stored ciphertext back and open the link through the stub.
    let reader = Stub::start(
        vec![],
        (
            200,
            vec![],
            serde_json::json!({ "data": stored }).to_string(),
        ),
    )
    .await;
    let link = format!("https://share.plannotator.ai/p/abcdefgh#key={key_b64url}");
    let opened = planshare(
        &[
            "open",
            &link,
            "--format",
            "markdown",
            "--paste-url",
            &reader.url,
        ],
        &[],
        "",
    )
    .await;
    assert_eq!(
        (opened.code, opened.stdout.as_str()),
        (0, "# Secret plan\n\ndetails"),
        "{}",
        opened.stderr
    );

    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let forms = [
        key_b64url.clone(),
        share_codec::encode_base64url(&key)
            .replace('-', "+")
            .replace('_', "/"),
        hex.clone(),
        hex.to_uppercase(),
    ];
    for request in stub.recorded().iter().chain(reader.recorded().iter()) {
        let sent = request.all_bytes();
        for form in &forms {
            assert!(!sent.contains(form.as_str()), "the key was sent: {sent}");
        }
        let raw = request.body.as_ref();
        assert!(
            !raw.windows(key.len()).any(|w| w == key.as_slice()),
            "raw key bytes in a body"
        );
    }
}

#[tokio::test]
async fn tampered_ciphertext_or_a_wrong_key_fails_with_exit_5_and_no_output() {
    let stub = Stub::start(vec![], (201, vec![], r#"{"id":"abcdefgh"}"#.to_owned())).await;
    let run = planshare(
        &["share", "-", "--short"],
        &[("PLANNOTATOR_PASTE_URL", &stub.url)],
        "# Plan",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let url = run.stdout.trim_end().to_owned();
    let body: Value = serde_json::from_slice(&created(&stub).body).unwrap();
    let stored = body["data"].as_str().unwrap().to_owned();

    let mut flipped = share_codec::decode_forgiving(&stored).unwrap();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let tampered = share_codec::encode_base64url(&flipped);
    let reader = Stub::start(
        vec![],
        (
            200,
            vec![],
            serde_json::json!({ "data": tampered }).to_string(),
        ),
    )
    .await;
    let opened = planshare(&["open", &url, "--paste-url", &reader.url], &[], "").await;
    assert_eq!(
        (opened.code, opened.stdout.as_str()),
        (5, ""),
        "{}",
        opened.stderr
    );

    let honest = Stub::start(
        vec![],
        (
            200,
            vec![],
            serde_json::json!({ "data": stored }).to_string(),
        ),
    )
    .await;
    let wrong_key = format!("{}#key={}", url.split_once('#').unwrap().0, "A".repeat(43));
    let opened = planshare(&["open", &wrong_key, "--paste-url", &honest.url], &[], "").await;
    assert_eq!(
        (opened.code, opened.stdout.as_str()),
        (5, ""),
        "{}",
        opened.stderr
    );
    assert_eq!(
        opened.stderr,
        "planshare: cannot decrypt the shared plan: wrong key or tampered data\n"
    );
}

/// Arguments, environment, expected exit code.
type Case<'a> = (Vec<String>, Vec<(&'a str, &'a str)>, i32);

#[tokio::test]
async fn failures_have_distinct_exit_codes_and_print_nothing_on_stdout() {
    let app = TestApp::spawn(&[]).await;
    let hash = planshare(
        &["share", "-", "--hash"],
        &[],
        "# Plan\n\nSome content here for truncation tests.",
    )
    .await;
    let url = hash.stdout.trim_end();
    let truncated = &url[..url.len() - 10];
    let dead = format!("http://127.0.0.1:{}", testkit::free_port());
    let cases: Vec<Case> = vec![
        (vec!["open".into(), truncated.into()], vec![], 4),
        (
            vec!["open".into(), "https://share.plannotator.ai/".into()],
            vec![],
            4,
        ),
        (vec!["open".into(), "not a link".into()], vec![], 4),
        (
            vec![
                "open".into(),
                format!("{}/p/abcdefghABCDEFGH#key={}", "https://x", "A".repeat(43)),
                "--paste-url".into(),
                app.base_url.clone(),
            ],
            vec![],
            6,
        ),
        (
            vec![
                "open".into(),
                format!("https://x/p/abcdefgh#key={}", "A".repeat(43)),
                "--paste-url".into(),
                dead,
            ],
            vec![],
            7,
        ),
        (
            vec!["share".into(), "-".into()],
            vec![("PLANNOTATOR_SHARE", "disabled")],
            3,
        ),
        (
            vec!["share".into(), "/nonexistent/plan.md".into()],
            vec![],
            9,
        ),
        (
            vec!["share".into(), "-".into(), "--html".into(), "--hash".into()],
            vec![],
            2,
        ),
        (
            vec![
                "open".into(),
                format!("https://x/p/abcdefgh#key={}", "A".repeat(43)),
                "--paste-url".into(),
                "http://paste.example.com".into(),
            ],
            vec![],
            10,
        ),
    ];
    for (args, env, code) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = planshare(&args, &env, "<html></html>").await;
        assert_eq!(run.code, code, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(
            run.stderr.starts_with("planshare: ") && run.stderr.lines().count() == 1,
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[tokio::test]
async fn remote_sessions_get_upstreams_hand_off_text_on_stderr() {
    let vector = vectors("cli_output").remove(0);
    let input = &vector["input"][0];
    let expected = vector["output"][0].as_str().unwrap();
    let run = planshare(
        &["share", "-"],
        &[("SSH_CONNECTION", "10.0.0.1 5000 10.0.0.2 22")],
        input["content"].as_str().unwrap(),
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let url = run.stdout.trim_end();
    assert_eq!(hash_json(url), r##"{"p":"# Plan\n\nDo it.","a":[]}"##);
    // Our deflate bytes differ from Node's (same JSON), so the URL and its
    // size label differ; the text around them is upstream's.
    let expected_url = expected.lines().nth(2).unwrap().trim();
    let expected_size = share_codec::format_size(expected_url.len() as u64);
    assert_eq!(
        expected_size, "74 B",
        "the vector's label is format_size of its URL"
    );
    let ours = expected
        .replace(expected_url, url)
        .replace(&expected_size, &share_codec::format_size(url.len() as u64));
    assert_eq!(run.stderr, ours);
    // Outside a remote session stderr stays quiet.
    let local = planshare(&["share", "-"], &[], "# Plan\n\nDo it.").await;
    assert_eq!(local.stderr, "");
}

#[tokio::test]
async fn html_documents_always_go_through_the_paste_service() {
    let app = TestApp::spawn(&[]).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let dir = tempfile::tempdir().unwrap();
    let page = write(&dir, "page.html", "<!doctype html><h1>Hello</h1>");
    let run = planshare(&["share", &page, "--json"], &env, "").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out["kind"], "short");
    let opened = planshare(
        &["open", out["url"].as_str().unwrap(), "--format", "markdown"],
        &[],
        "",
    )
    .await;
    assert_eq!(opened.stdout, "<!doctype html><h1>Hello</h1>");
}

#[tokio::test]
async fn selections_of_rendered_text_are_re_found_in_the_markdown() {
    // Reviewers select rendered text: "Use JWT tokens" is `Use **JWT** tokens` in the source.
    let dir = tempfile::tempdir().unwrap();
    let ann = write(
        &dir,
        "a.json",
        r#"[{"type":"COMMENT","originalText":"Use JWT tokens","text":"prefer opaque ids"},
            {"type":"COMMENT","originalText":"not in the plan","text":"lost"}]"#,
    );
    let plan = "# Auth\n\n## Tokens\n\nUse **JWT** tokens for sessions.\n";
    let share = planshare(&["share", "-", "--annotations", &ann, "--hash"], &[], plan).await;
    let opened = planshare(&["open", share.stdout.trim_end()], &[], "").await;
    assert_eq!(opened.code, 0, "{}", opened.stderr);
    assert!(
        opened
            .stdout
            .contains("## 2. (line 5) Feedback on: \"Use JWT tokens\"\n> prefer opaque ids\n"),
        "{}",
        opened.stdout
    );
    // The one that is not in the plan is still exported, and reported.
    assert!(
        opened
            .stdout
            .contains("## 1. Feedback on: \"not in the plan\"\n> lost\n"),
        "{}",
        opened.stdout
    );
    assert_eq!(
        opened.stderr,
        "planshare: 1 of 2 annotations could not be found in the plan (exported without line numbers)\n"
    );
}

#[tokio::test]
async fn open_json_reports_the_steps_of_a_checklist_plan() {
    // The `## Steps` section's top-level items are the steps: not the
    // context item above it, the nested item, the fenced one or the risk.
    let plan = "# Migrate auth\r\n\r\n- [x] read the old code\r\n\r\n## Steps\r\n\r\n\
                - [x] Add the middleware\r\n- [~] Move the routes\r\n  - [ ] admin routes\r\n\
                ```md\r\n- [ ] not a step\r\n```\r\n- [ ] Drop the old sessions\r\n\r\n\
                ## Risks\r\n\r\n- [ ] rollback\r\n";
    let share = planshare(&["share", "-", "--hash"], &[], plan).await;
    assert_eq!(share.code, 0, "{}", share.stderr);
    let url = share.stdout.trim_end();
    let opened = planshare(&["open", url, "--format", "json"], &[], "").await;
    assert_eq!(opened.code, 0, "{}", opened.stderr);
    let opened: Value = serde_json::from_str(&opened.stdout).unwrap();
    assert_eq!(
        opened["steps"],
        serde_json::json!({
            "total": 3,
            "done": 1,
            "current": 1,
            "items": [
                {"text": "Add the middleware", "state": "done", "line": 7},
                {"text": "Move the routes", "state": "in-progress", "line": 8},
                {"text": "Drop the old sessions", "state": "pending", "line": 13},
            ],
        })
    );

    // A plan without task items: `"steps": null`.
    let share = planshare(&["share", "-", "--hash"], &[], "# Plan\n\n- an item\n").await;
    let opened = planshare(
        &["open", share.stdout.trim_end(), "--format", "json"],
        &[],
        "",
    )
    .await;
    assert_eq!(opened.code, 0, "{}", opened.stderr);
    let opened: Value = serde_json::from_str(&opened.stdout).unwrap();
    assert!(
        opened.as_object().unwrap().contains_key("steps"),
        "{opened}"
    );
    assert_eq!(opened["steps"], Value::Null);
}

/// A plan whose share payload (`{"p":…,"a":[]}`) is exactly `json_len` bytes.
fn plan_with_payload_of(json_len: usize) -> String {
    let head = "# Plan\n\n";
    let overhead = r#"{"p":"","a":[]}"#.len() + head.len() + 2; // two "\n" are escaped
    let filler = "lorem ipsum dolor sit amet ".repeat((json_len - overhead) / 27 + 1);
    let plan = format!("{head}{}", &filler[..json_len - overhead]);
    assert_eq!(
        share_codec::SharePayload::markdown(plan.clone())
            .to_json()
            .len(),
        json_len
    );
    plan
}

#[tokio::test]
async fn a_plan_open_would_refuse_is_refused_at_share_time() {
    const LIMIT: usize = 64 * 1024 * 1024;
    let stub = Stub::start(vec![], (201, vec![], r#"{"id":"abcdefgh"}"#.to_owned())).await;
    let over = plan_with_payload_of(LIMIT + 1);
    for kind in ["--short", "--hash", "--auto"] {
        let run = planshare(
            &["share", "-", kind],
            &[("PLANNOTATOR_PASTE_URL", &stub.url)],
            &over,
        )
        .await;
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (8, ""),
            "{kind}: {}",
            run.stderr
        );
        assert_eq!(
            run.stderr,
            format!(
                "planshare: the plan and its annotations are {} bytes as JSON; links are limited to 67108864 bytes (64 MiB) of it, the most `planshare open` and the portal read\n",
                LIMIT + 1
            ),
            "{kind}"
        );
    }
    assert!(stub.recorded().is_empty(), "nothing was stored");

    // At the limit: shared, and opened again whole.
    let app = TestApp::spawn(&[]).await;
    let env = [("PLANNOTATOR_PASTE_URL", app.base_url.as_str())];
    let at = plan_with_payload_of(LIMIT);
    let run = planshare(&["share", "-", "--short"], &env, &at).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let opened = planshare(
        &["open", run.stdout.trim_end(), "--format", "markdown"],
        &[],
        "",
    )
    .await;
    assert_eq!(opened.code, 0, "{}", opened.stderr);
    assert!(opened.stdout == at, "the plan round-trips");
}

#[tokio::test]
async fn a_wrong_api_key_is_not_authorised() {
    let app = TestApp::spawn(&[]).await;
    let wrong = format!("pst_live_{}", "w".repeat(40));
    let env = [
        ("PLANNOTATOR_PASTE_URL", app.base_url.as_str()),
        ("PLANSHARE_API_KEY", wrong.as_str()),
    ];
    let share = planshare(&["share", "-", "--short"], &env, "# Plan\n\nDo it.").await;
    assert_eq!(
        (share.code, share.stdout.as_str()),
        (12, ""),
        "{}",
        share.stderr
    );
    assert!(
        share.stderr.starts_with(
            "planshare: not authorised: the paste service refused PLANSHARE_API_KEY (HTTP 401"
        ),
        "{}",
        share.stderr
    );
    assert!(!share.stderr.contains(&wrong), "the key is not printed");
    let get = planshare(&["paste", "get", "abcdefgh"], &env, "").await;
    assert_eq!(get.code, 12, "{}", get.stderr);
}

/// The key goes to the configured paste API only: a link whose `&paste=`
/// names another one (another port here) is read without it.
#[tokio::test]
async fn the_api_key_never_goes_to_a_paste_api_a_link_names() {
    let (key, data) =
        share_codec::encrypt_payload(&share_codec::SharePayload::markdown("# Plan")).unwrap();
    let stored = (200, vec![], serde_json::json!({ "data": data }).to_string());
    let configured = Stub::start(vec![], stored.clone()).await;
    let foreign = Stub::start(vec![], stored).await;
    let api_key = format!("pst_live_{}", "s".repeat(40));
    let env = [
        ("PLANNOTATOR_PASTE_URL", configured.url.as_str()),
        ("PLANSHARE_API_KEY", api_key.as_str()),
    ];
    let base = "https://share.plannotator.ai";

    let link = share_codec::short_url(base, "abcdefgh", &key, &foreign.url);
    let run = planshare(&["open", &link, "--format", "markdown"], &env, "").await;
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "# Plan"),
        "{}",
        run.stderr
    );
    let requests = foreign.recorded();
    assert_eq!(requests.len(), 1);
    assert!(!requests[0].headers.contains_key("authorization"));
    assert!(!requests[0].all_bytes().contains(&api_key));

    // The configured API, named by the link or not, gets it.
    let own = share_codec::short_url(base, "abcdefgh", &key, &configured.url);
    for link in [own, format!("{base}/p/abcdefgh#key={}", key.to_base64url())] {
        let run = planshare(&["open", &link, "--format", "markdown"], &env, "").await;
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let requests = configured.recorded();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request.headers["authorization"],
            format!("Bearer {api_key}")
        );
    }
}

/// A link's plan and comments cannot drive the reader's terminal: the text
/// formats drop control characters (ESC, CSI, OSC 8 and 52, BEL, CR); the
/// JSON output keeps them, escaped, exactly.
#[tokio::test]
async fn a_link_cannot_drive_the_terminal() {
    let esc = "\u{1b}";
    let plan = format!(
        "# Plan{esc}]0;owned{bell}\n\nStep one {esc}[2J{esc}[Hwipe\n\nclick {esc}]8;;https://evil.test{esc}\\here{esc}]8;;{esc}\\ and {csi}31mred\r\n",
        bell = '\u{7}',
        csi = '\u{9b}'
    );
    let annotations = serde_json::json!([
        {"type": "COMMENT", "originalText": "Step one", "text": format!("copy {esc}]52;c;ZXZpbA=={bell} this", bell = '\u{7}')},
        {"type": "GLOBAL_COMMENT", "text": format!("{esc}[1A{esc}[2Koverwritten")}
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("annotations.json");
    std::fs::write(&file, annotations.to_string()).unwrap();
    let shared = planshare(
        &[
            "share",
            "-",
            "--hash",
            "--annotations",
            file.to_str().unwrap(),
        ],
        &[],
        &plan,
    )
    .await;
    assert_eq!(shared.code, 0, "{}", shared.stderr);
    let link = shared.stdout.trim_end();
    for format in ["feedback", "markdown"] {
        let run = planshare(&["open", link, "--format", format], &[], "").await;
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        let control = run
            .stdout
            .chars()
            .find(|&c| c.is_control() && c != '\n' && c != '\t');
        assert_eq!(control, None, "{format}: {:?}", run.stdout);
    }
    let markdown = planshare(&["open", link, "--format", "markdown"], &[], "").await;
    assert!(
        markdown.stdout.contains("Step one [2J[Hwipe"),
        "{:?}",
        markdown.stdout
    );
    let feedback = planshare(&["open", link, "--format", "feedback"], &[], "").await;
    assert!(feedback.stdout.contains("this"), "{:?}", feedback.stdout);
    assert!(
        feedback.stdout.contains("overwritten"),
        "{:?}",
        feedback.stdout
    );
    let json = planshare(&["open", link, "--format", "json"], &[], "").await;
    let opened: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(opened["plan"], plan.as_str(), "JSON keeps the text exactly");
}

/// The create a stub received (the command may ask for discovery first);
/// fails the test when there was none.
fn created(stub: &Stub) -> crate::support::Recorded {
    stub.recorded()
        .into_iter()
        .find(|r| r.method == axum::http::Method::POST && r.uri.path() == "/api/paste")
        .unwrap()
}

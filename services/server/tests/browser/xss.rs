//! The portal against hostile content (the browser side is
//! `crates/portal/browser-tests/xss.mjs`). The checks are labelled F1–F11,
//! and the tests are named after their labels:
//!
//! - F1: the payload corpus in every field of a share renders inert with
//!   the sanitiser (the browser's own, and DOMPurify where a browser has
//!   none); F2: with the sanitiser switched off (the portal's
//!   `test-hooks` feature, dev builds only) the CSP alone stops it;
//! - F3: the CSP itself, directive by directive and by `csp_evaluator`;
//! - F4: annotation text is text; F5: the key never leaves the page and no
//!   request carries a Referer; F6: API answers opened as pages are inert
//!   data; F8: tampered ciphertext shows the error and nothing of the plan;
//! - F11: a link naming a paste API the portal does not allow never reaches
//!   it, and one it allows is rendered under the F1 rules without the key;
//! - F12: review pages (owner and reviewer) with the corpus in the plan, a
//!   writer's name, comments and a reply, under the F1 rules, names in the owner's
//!   links dialog as text.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use testkit::TestApp;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::{harness, reviews, run_harness};

const SHORT_ERROR: &str = "Failed to load shared plan — the link may be expired or incomplete.";

/// `<svg … onload="alert(1)"><script>alert(2)</script></svg>`, base64: an
/// image whose script would run if it were ever opened as a document.
const SVG_WITH_SCRIPT: &str = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIG9ubG9hZD0iYWxlcnQoMSkiPjxzY3JpcHQ+YWxlcnQoMik8L3NjcmlwdD48L3N2Zz4=";

/// The hostile payload corpus: script tags and handlers, `javascript:` and
/// `data:` links in their disguises, forms, `<base>`, refresh, embedded
/// objects, remote styles and images, DOM clobbering; each goes into every
/// field of a share.
fn corpus() -> Vec<String> {
    let mut corpus: Vec<String> = [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<svg onload=alert(1)>",
        "<svg><script>alert(1)</script></svg>",
        r#"<iframe src="javascript:alert(1)">"#,
        r#"<iframe srcdoc="<script>alert(1)</script>">"#,
        r#"<a href="javascript:alert(1)">x</a>"#,
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](java&#x73;cript:alert(1))",
        "[x](javascript&#58;alert(1))",
        "[x](%6Aavascript:alert(1))",
        "[x]( javascript:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "[x](vbscript:msgbox(1))",
        r#"![x](x" onerror="alert(1))"#,
        "![x](javascript:alert(1))",
        "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
        r#"<form action="https://127.0.0.2:9/"><button>go</button></form>"#,
        r#"<base href="https://127.0.0.2:9/">"#,
        r#"<meta http-equiv="refresh" content="0;url=javascript:alert(1)">"#,
        r#"<object data="data:text/html,<script>alert(1)</script>">"#,
        r#"<embed src="data:text/html,<script>alert(1)</script>">"#,
        "<link rel=stylesheet href=//127.0.0.2:9/x.css>",
        "<style>@import '//127.0.0.2:9/x'</style>",
        "![t](http://127.0.0.2:9/track.png)",
        r#"<div id="__proto__">"#,
        "<form id=x><input name=attributes>",
        r#"<img name="getElementById" src="x.png"><img name="querySelector"><a id="cookie" href="/">c</a>"#,
        r#"<p id="annotation-list">taken id</p><span id="status">taken id</span>"#,
        r#"<a href="https://127.0.0.2:9/" ping="https://127.0.0.2:9/ping">pinged</a>"#,
        r#"<a href="&#x20;data:text/html,<script>alert(1)</script>">spaced data</a>"#,
        "{{constructor.constructor('alert(1)')()}}",
        r#""><img src=x onerror=alert(1)>.txt"#,
        // Inside elements the sanitiser removes: a document parsed live
        // would ask for these images before the sanitiser ran.
        r#"<form><img src="/inert-probe-form.png"></form>"#,
        r#"<template><img src="/inert-probe-template.png"></template>"#,
        r#"<noscript><img src="/inert-probe-noscript.png"></noscript>"#,
        r#"<svg><image href="/inert-probe-svg.png"/></svg>"#,
        r#"<math><mi><img src="/inert-probe-math.png" onerror=alert(1)></mi></math>"#,
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    // SVG with <script> (CVE-2022-24833 class): as an attachment path and
    // as an image in the plan.
    corpus.push(format!("data:image/svg+xml;base64,{SVG_WITH_SCRIPT}"));
    corpus.push(format!(
        "![svg](data:image/svg+xml;base64,{SVG_WITH_SCRIPT})"
    ));
    corpus
}

/// A share with `payload` in every field: the plan's title heading and
/// body, a comment's quote, text, author, image path and name, a global
/// comment (with an old-form image), a deletion, a global attachment.
fn share_json(payload: &str) -> String {
    json!({
        "p": format!("# {payload}\n\n{payload}\n\nThe rest of the plan.\n"),
        "a": [
            ["C", payload, payload, payload, [[payload, payload]]],
            ["G", payload, payload, [payload]],
            ["D", payload, payload, null],
        ],
        "g": [[payload, payload]],
    })
    .to_string()
}

/// One hash link per corpus payload, on `base`.
fn corpus_cases(base: &str) -> Vec<Value> {
    corpus()
        .iter()
        .enumerate()
        .map(|(i, payload)| {
            json!({
                "name": format!("#{i} {payload}"),
                "url": format!("{base}/#{}", share_codec::compress(&share_json(payload))),
                "payload": payload,
            })
        })
        .collect()
}

/// What `/config.json` tells the app.
async fn config_json(app: &TestApp) -> Value {
    app.get_path("/config.json").await.json().await.unwrap()
}

/// Stores `data` as a paste and returns its id.
async fn store(app: &TestApp, data: &str) -> String {
    app.create_ok(data).await["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f1_the_corpus_renders_inert_with_the_sanitizer() {
    corpus_renders_inert_with("native").await;
}

/// F1 again on the fallback path: a browser without the Sanitizer API
/// (removed from the page before its scripts run) sanitises with DOMPurify
/// under the same rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f1_the_corpus_renders_inert_with_dompurify_where_the_browser_has_no_sanitizer() {
    corpus_renders_inert_with("dompurify").await;
}

/// F1 with the page sanitising by `engine` ("native" or "dompurify").
async fn corpus_renders_inert_with(engine: &str) {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    // A server as configured (no test hook set) never asks for it.
    assert!(config_json(&app).await.get("testHooks").is_none());
    let cases = corpus_cases(&app.base_url);
    let input = json!({
        "chromium": chromium, "check": "corpus", "mode": "sanitised", "engine": engine,
        "allowed": [app.base_url], "cases": cases,
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    let opened = report["cases"].as_array().unwrap();
    assert_eq!(opened.len(), cases.len());
    // The corpus has links and buttons to click; they were clicked.
    let clicked: u64 = opened.iter().map(|c| c["clicked"].as_u64().unwrap()).sum();
    assert!(clicked >= 8, "{clicked} links clicked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f2_the_csp_alone_stops_the_corpus() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn_configured(&[], |s| s.portal.disable_sanitizer_for_tests = true).await;
    assert_eq!(
        config_json(&app).await["testHooks"],
        json!({"disableSanitizer": true})
    );
    let input = json!({
        "chromium": chromium, "check": "corpus", "mode": "csp-only", "control": true,
        "allowed": [app.base_url], "cases": corpus_cases(&app.base_url),
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    assert_eq!(report["sanitizerOff"], true);
    // The control run (same links, CSP header removed) shows what would
    // run without the CSP; at least these do, so the check has teeth.
    let executed: Vec<&str> = report["executedWithoutCsp"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    // (`<svg onload>` and the mutation-XSS payload do not: inserted with
    // innerHTML, an svg fires no load event, and unsanitised markup has
    // nothing to mutate.)
    for payload in [
        "<img src=x onerror=alert(1)>",
        r#"<iframe srcdoc="<script>alert(1)</script>">"#,
        r#"<a href="javascript:alert(1)">x</a>"#,
        "[x](javascript:alert(1))",
        "[x](java&#x73;cript:alert(1))",
        r#"<object data="data:text/html,<script>alert(1)</script>">"#,
        r#""><img src=x onerror=alert(1)>.txt"#,
    ] {
        assert!(
            executed.contains(&payload),
            "{payload} did not run without the CSP: {executed:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f3_the_csp_is_strict() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let plain = TestApp::spawn(&[]).await;
    let configured = TestApp::spawn_configured(&[], |s| {
        s.portal.paste_api_url = "https://paste.example.com".into();
        s.portal.allowed_paste_apis = vec![
            "https://other.example.org/base".into(),
            "http://127.0.0.1:9".into(),
        ];
    })
    .await;
    let input = json!({
        "chromium": chromium, "check": "csp", "allowed": [],
        "targets": [
            {"origin": plain.base_url, "connect": []},
            {"origin": configured.base_url, "connect": [
                "https://paste.example.com", "https://other.example.org", "http://127.0.0.1:9",
            ]},
        ],
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    assert_eq!(report["targets"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f4_annotation_markup_shows_as_text() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let payload = "<b>x</b>";
    let input = json!({
        "chromium": chromium, "check": "corpus", "mode": "sanitised",
        "allowed": [app.base_url],
        "cases": [{
            "name": "F4",
            "url": format!("{}/#{}", app.base_url, share_codec::compress(&share_json(payload))),
            "payload": payload,
        }],
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    let shown = &report["cases"][0]["shown"];
    assert_eq!(shown["annotations"][0]["text"], payload);
    assert_eq!(
        shown["annotations"][0]["meta"],
        format!("Comment — {payload}")
    );
    assert_eq!(shown["listed"], json!([]), "no <b> in the annotation list");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f5_the_key_never_leaves_the_page() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    // Long enough (incompressible words) that the portal offers a short
    // link when sharing it again.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let words: Vec<String> = (0..400)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            format!("{seed:x}")
        })
        .collect();
    let outbound = "http://127.0.0.2:9/outbound";
    let plan = format!(
        "# Secret plan\n\nSee [the notes]({outbound}).\n\n{}\n",
        words.join(" ")
    );
    let share = json!({"p": plan, "a": [["C", "Secret plan", "ok", "Ann", null]]}).to_string();
    let (key, data) = share_codec::encrypt(&share_codec::compress(&share)).unwrap();
    let id = store(&app, &data).await;
    let url = share_codec::short_url(&app.base_url, &id, &key, share_codec::DEFAULT_PASTE_API);
    let input = json!({
        "chromium": chromium, "check": "key", "allowed": [app.base_url],
        "url": url, "key": key.to_base64url(), "outbound": outbound,
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    // The paste was read and a new one written: the checks saw real traffic.
    let requests = report["requests"].as_array().unwrap();
    assert!(
        requests.iter().any(|r| r["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/api/paste/{id}"))),
        "{report:#}"
    );
    assert_eq!(report["posts"], 1, "{report:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f6_api_answers_opened_as_pages_are_inert_data() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let payload = "<script>alert(1)</script>";
    let id = store(&app, payload).await;
    let found = app.url(&format!("/api/paste/{id}"));
    let absent = app.url("/api/paste/AbsentPaste12345");
    let input = json!({
        "chromium": chromium, "check": "raw", "allowed": [app.base_url],
        "urls": [found, absent],
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    let answers = report["answers"].as_array().unwrap();
    assert_eq!(answers.len(), 2);
    for answer in answers {
        let headers = &answer["headers"];
        let header = |name: &str| headers[name].as_str().unwrap_or_default().to_owned();
        assert!(
            header("content-type").starts_with("application/json"),
            "{answer:#}"
        );
        assert_eq!(header("x-content-type-options"), "nosniff", "{answer:#}");
        let csp: Vec<String> = header("content-security-policy")
            .split(';')
            .map(|d| d.trim().to_owned())
            .collect();
        for directive in ["default-src 'none'", "sandbox"] {
            assert!(
                csp.iter().any(|d| d == directive),
                "{directive}: {answer:#}"
            );
        }
        assert_eq!(answer["scripts"], 0, "{answer:#}");
    }
    assert_eq!(answers[0]["status"], 200);
    // Shown as text, which is what it is.
    assert!(
        answers[0]["text"].as_str().unwrap().contains(payload),
        "{report:#}"
    );
    assert_eq!(answers[1]["status"], 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f8_tampered_ciphertext_shows_the_error_and_nothing_else() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let marker = "Zanzibar-plaintext-marker";
    let share = json!({
        "p": format!("# {marker}\n\nThe {marker} plan."),
        "a": [["G", marker, "Ann", null]],
    })
    .to_string();
    let (key, data) = share_codec::encrypt(&share_codec::compress(&share)).unwrap();
    let bytes = share_codec::decode_forgiving(&data).unwrap();
    let flipped = |at: usize| {
        let mut b = bytes.clone();
        b[at] ^= 0x01;
        share_codec::encode_base64url(&b)
    };
    let variants = [
        ("IV", flipped(0)),
        ("ciphertext", flipped(12)),
        ("last ciphertext byte", flipped(bytes.len() - 17)),
        ("tag", flipped(bytes.len() - 1)),
        ("truncated", share_codec::encode_base64url(&bytes[..20])),
        (
            "tag cut off",
            share_codec::encode_base64url(&bytes[..bytes.len() - 16]),
        ),
    ];
    let mut cases = Vec::new();
    for (name, tampered) in variants {
        let id = store(&app, &tampered).await;
        let url = share_codec::short_url(&app.base_url, &id, &key, share_codec::DEFAULT_PASTE_API);
        cases.push(json!({"name": name, "url": url}));
    }
    // The untampered paste opens with the same key: the check can see
    // a plan when there is one.
    let id = store(&app, &data).await;
    let good = share_codec::short_url(&app.base_url, &id, &key, share_codec::DEFAULT_PASTE_API);
    cases.push(json!({"name": "untampered", "url": good, "opens": true}));
    let count = cases.len();
    let input = json!({
        "chromium": chromium, "check": "errors", "allowed": [app.base_url],
        "cases": cases, "error": SHORT_ERROR, "marker": marker,
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    assert_eq!(report["cases"].as_array().unwrap().len(), count);
}

/// A paste API on 127.0.0.2 that counts connections, keeps what each
/// request sent, and answers every request with `body` (CORS open).
struct Canary {
    origin: String,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

async fn canary(body: String) -> Canary {
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (count, seen) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let (seen, body) = (seen.clone(), body.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65_536 {
                    match tokio::time::timeout(
                        std::time::Duration::from_secs(5),
                        socket.read(&mut buf),
                    )
                    .await
                    {
                        Ok(Ok(n)) if n > 0 => head.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                }
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                     access-control-allow-origin: *\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Canary {
        origin,
        connections,
        requests,
    }
}

/// The forms a key could travel in.
fn key_forms(key: &share_codec::ShareKey) -> Vec<String> {
    use std::fmt::Write as _;
    let hex = key.as_bytes().iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    });
    let b64url = key.to_base64url();
    let b64 = b64url.replace('-', "+").replace('_', "/");
    vec![
        b64url,
        b64.clone(),
        format!("{b64}="),
        hex.to_uppercase(),
        hex,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f11_a_paste_api_the_portal_does_not_allow_is_never_asked() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let payload = "<img src=x onerror=alert(1)><svg onload=alert(2)>[x](javascript:alert(3))";
    let (key, data) = share_codec::encrypt(&share_codec::compress(&share_json(payload))).unwrap();
    let body = json!({ "data": data }).to_string();

    // Not allowed: the portal refuses the link before any request.
    let refused = canary(body.clone()).await;
    let app = TestApp::spawn(&[]).await;
    let url = share_codec::short_url(&app.base_url, "CanaryPaste1", &key, &refused.origin);
    assert!(url.contains("&paste="), "{url}");
    let input = json!({
        "chromium": chromium, "check": "errors",
        // Let requests to the canary through: it, not the harness, must see none.
        "allowed": [app.base_url, refused.origin],
        "cases": [{"name": "not allowed", "url": url}], "error": SHORT_ERROR,
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    assert_eq!(refused.connections.load(Ordering::SeqCst), 0);

    // Allowed by the operator: the hostile share renders under the F1
    // rules, and the request that fetched it carries no key.
    let allowed = canary(body).await;
    let app = TestApp::spawn_configured(&[], |s| {
        s.portal.allowed_paste_apis = vec![allowed.origin.clone()];
    })
    .await;
    let url = share_codec::short_url(&app.base_url, "CanaryPaste1", &key, &allowed.origin);
    let input = json!({
        "chromium": chromium, "check": "corpus", "mode": "sanitised",
        "allowed": [app.base_url, allowed.origin],
        "cases": [{"name": "allowed", "url": url, "payload": payload}],
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    assert!(allowed.connections.load(Ordering::SeqCst) >= 1);
    let requests = allowed.requests.lock().unwrap().clone();
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with("GET /api/paste/CanaryPaste1 ")),
        "{requests:?}"
    );
    for request in &requests {
        for form in key_forms(&key) {
            assert!(
                !request.contains(&form),
                "the key reached the paste API: {request}"
            );
        }
        assert!(
            !request.to_ascii_lowercase().contains("\r\nreferer:"),
            "{request}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f12_review_pages_render_the_corpus_inert() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let mut cases = Vec::new();
    for (i, payload) in corpus().iter().enumerate() {
        let plan: Value = serde_json::from_str(&share_json(payload)).unwrap();
        let review = reviews::start_review_of(&app, &plan, 1).await;
        let name = if payload.chars().count() <= 64 {
            payload.clone()
        } else {
            format!("writer {i}")
        };
        let writer = &review.reviewers[0];
        // Her comments are threads, and she answered the first one.
        review
            .put_set(
                &app,
                writer,
                &name,
                &json!({"v": 1, "a": [
                    ["C", payload, payload, payload, null],
                    ["G", payload, payload, null],
                ], "ids": ["xssThread001", "xssThread002"], "replies": [
                    {"id": "xssReply0001", "to": "xssThread001", "text": payload, "at": 1_800_000_000_000_u64},
                ]}),
            )
            .await;
        let as_owner = i % 2 == 0;
        let token = if as_owner { &review.owner } else { writer };
        cases.push(json!({
            "name": format!("#{i} {} {payload}", if as_owner { "owner" } else { "writer" }),
            "url": review.link(&app, token),
            "annotations": [
                {"meta": format!("Comment — {payload}"), "quote": payload, "text": payload},
                {"meta": format!("Comment on the plan — {payload}"), "quote": null, "text": payload},
                {"meta": format!("Deletion — {payload}"), "quote": payload, "text": null},
                {"meta": format!("Comment — {name}"), "quote": payload, "text": payload},
                {"meta": format!("Comment on the plan — {name}"), "quote": null, "text": payload},
            ],
            "links": if as_owner { json!([name]) } else { Value::Null },
            "replies": [{"who": name, "said": payload}],
        }));
    }
    let input = json!({
        "chromium": chromium, "check": "reviews", "allowed": [app.base_url], "cases": cases,
    });
    let report = run_harness(&dir, "xss.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    assert_eq!(report["cases"].as_array().unwrap().len(), cases.len());
    let clicked: u64 = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["clicked"].as_u64().unwrap())
        .sum();
    assert!(clicked >= 8, "{clicked} links clicked");
}

//! Code blocks and raw-HTML plans (`crates/portal/browser-tests/frames.mjs`):
//! fenced code with a known language is highlighted without changing its
//! text, so annotations inside it are still found; a raw-HTML plan is
//! shown in a sandboxed frame with its own CSS, and everything its
//! document could try (its own scripts and handlers, a refresh, links,
//! forms, frames and popups, remote CSS and images, reaching the portal's
//! page, storage or the key) throws or is blocked — with a canary server
//! that must see no connection at all.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use testkit::TestApp;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpListener;

use crate::{harness, run_harness};

const RUST: &str = "fn main() {\n    let items = vec![1u32, 2, 3];\n    let total: u32 = items.iter().sum();\n    println!(\"{total}\"); // done\n}";
const TS: &str = "export const limit: number = 42;\nfunction greet(name: string): string {\n  return `hi ${name} <b>`;\n}";
const PLAIN: &str = "  plain <b>block</b> & no language\n    indented";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_blocks_are_highlighted_and_annotations_in_them_found() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let plan = format!(
        "# Highlighted plan\n\n```rust\n{RUST}\n```\n\nThen the client:\n\n```ts\n{TS}\n```\n\n```\n{PLAIN}\n```\n"
    );
    let payload = json!({"p": plan, "a": [
        ["C", "items.iter().sum()", "Overflow?", "Ann", null],
        ["C", "limit: number", "Why 42?", "Bo", null],
    ]});
    let url = format!(
        "{}/#{}",
        app.base_url,
        share_codec::compress(&payload.to_string())
    );
    let input = json!({
        "chromium": chromium,
        "code": {
            "url": url,
            "blocks": [
                {"language": "rust", "source": RUST},
                {"language": "ts", "source": TS},
                {"language": null, "source": PLAIN},
            ],
            "annotations": ["items.iter().sum()", "limit: number"],
        },
    });
    let report = run_harness(&dir, "frames.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
}

/// A server on another loopback address that counts connections (and
/// answers each with an empty 200, so nothing fails for want of one).
async fn canary() -> (String, Arc<AtomicUsize>) {
    let listener = match TcpListener::bind("127.0.0.2:0").await {
        Ok(listener) => listener,
        Err(_) => TcpListener::bind("127.0.0.1:0").await.unwrap(),
    };
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
        }
    });
    (format!("http://{addr}"), hits)
}

/// A raw-HTML plan that tries everything: its own scripts, handlers,
/// refresh, remote CSS, images and frames, links, a form; with CSS of its
/// own that must apply.
fn hostile_html(canary: &str, paste_id: &str) -> String {
    format!(
        r##"<!doctype html>
<html><head><title>Hostile HTML plan</title>
<meta http-equiv="refresh" content="0;url={canary}/refresh">
<meta http-equiv="set-cookie" content="stolen=1">
<link rel="stylesheet" href="{canary}/style.css"><link rel="prefetch" href="{canary}/prefetch">
<link rel="dns-prefetch" href="{canary}"><link rel="preconnect" href="{canary}">
<base href="{canary}/">
<style>@import url({canary}/import.css); h1 {{ color: rgb(1, 2, 3); }} .box {{ background: url({canary}/bg.png); }}</style>
<script src="{canary}/script.js"></script>
<script>
window.__ran = "inline script";
try {{ parent.location.hash = "#pwned"; }} catch (e) {{}}
try {{ top.location = "{canary}/top"; }} catch (e) {{}}
try {{ localStorage.setItem("x", "y"); }} catch (e) {{}}
try {{ document.cookie = "stolen=1"; }} catch (e) {{}}
fetch("/api/paste/{paste_id}");
window.open("{canary}/popup");
document.forms[0].submit();
alert("inline script");
</script>
</head>
<body onload="window.__ran = 'onload'; alert('onload')">
<h1>Hostile HTML plan</h1>
<p id="styled" class="box" style="font-weight: 700">Styled by the document's own CSS.</p>
<img src="{canary}/img.png" onerror="window.__ran = 'onerror'">
<img src="data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==" alt="">
<a id="out" href="{canary}/link">out</a> <a id="js" href="javascript:window.__ran='js url'">js</a>
<a id="blank" href="{canary}/blank" target="_blank">blank</a>
<form id="form" action="{canary}/form" method="post"><input name="q" value="1"><button>go</button></form>
<iframe src="{canary}/iframe"></iframe><iframe srcdoc="<script>parent.parent.location='{canary}/srcdoc'</script>"></iframe>
<object data="{canary}/object"></object><embed src="{canary}/embed">
<svg><script>window.__ran = "svg script"</script><a href="javascript:window.__ran='svg link'"><text y="20">svg</text></a></svg>
<noscript><p id="ns">Shown: scripts never run here.</p></noscript>
</body></html>"##
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_html_plans_are_isolated_in_a_sandboxed_frame() {
    let Some((chromium, dir)) = harness() else {
        return;
    };
    let app = TestApp::spawn(&[]).await;
    let (canary, hits) = canary().await;

    // The frame document has a CSP of its own: the plan's inline CSS, no
    // network, only the loader's script, an opaque origin.
    let frame = app.get_path("/frame").await;
    assert_eq!(frame.status(), 200);
    let csp = frame.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    for directive in [
        "default-src 'none'",
        "script-src 'self';",
        "style-src 'unsafe-inline'",
        "img-src data:;",
        "form-action 'none'",
        "frame-ancestors 'self'",
        "sandbox allow-scripts;",
    ] {
        assert!(csp.contains(directive), "{directive} in {csp}");
    }
    assert!(!csp.contains("allow-same-origin") && !csp.contains("connect-src"));
    let page_csp = app.get_path("/config.json").await.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(page_csp.contains("frame-src 'self';"), "{page_csp}");

    // The document's own script fetches a decoy paste (ids are random, so
    // it cannot name its own); the harness then tries the real one from
    // inside the frame. Neither may be answered to the frame.
    let decoy = app.create_ok("decoy").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let payload = json!({"p": "", "a": [], "h": hostile_html(&canary, &decoy), "r": "html"});
    let (key, data) = share_codec::encrypt(&share_codec::compress(&payload.to_string())).unwrap();
    let id = app.create_ok(&data).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = share_codec::short_url(&app.base_url, &id, &key, share_codec::DEFAULT_PASTE_API);
    let input = json!({
        "chromium": chromium,
        "html": {"url": url, "pasteId": id, "key": key.to_base64url(), "canary": canary},
    });
    let report = run_harness(&dir, "frames.mjs", &input).await;
    assert_eq!(report["failures"], json!([]), "{report:#}");
    assert!(
        report["html"]["frameViolations"].as_u64().unwrap() > 0,
        "the frame's CSP reported the blocked attempts: {report:#}"
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the canary saw a connection: {report:#}"
    );
}

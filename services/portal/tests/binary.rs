//! The real `planshare-portal` binary on a free port: the app at `/`,
//! `/p/<id>` and other page paths for any GET (not only browser
//! navigations), `/config.json` from the environment, the frame document,
//! assets, 404 and 405 — all with the portal's headers; bad configuration
//! exits non-zero naming the setting; SIGTERM exits 0; `sizes` prints the
//! asset table.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_planshare-portal");

/// Variables of the binary a test must not inherit.
const VARS: [&str; 6] = [
    "PLANSHARE_PORTAL_ADDR",
    "PLANSHARE_PORTAL_CALLBACK_ORIGINS",
    "PLANSHARE_PORTAL_PASTE_API_URL",
    "PLANSHARE_PORTAL_ALLOWED_PASTE_APIS",
    "PLANSHARE_SHARE_BASE_URL",
    "PLANSHARE_LOG_FORMAT",
];

fn command(vars: &[(&str, &str)]) -> Command {
    let mut command = Command::new(BIN);
    for var in VARS {
        command.env_remove(var);
    }
    command.envs(vars.iter().copied());
    command
}

/// A running portal; killed when dropped.
struct Portal {
    child: Child,
    base: String,
    /// The thread collecting the portal's stderr; yields all of it once the
    /// process has exited.
    log: Option<JoinHandle<String>>,
}

impl Portal {
    /// Everything the portal wrote to stderr (call after it exited).
    fn stderr(&mut self) -> String {
        self.log
            .take()
            .map(|log| log.join().unwrap())
            .unwrap_or_default()
    }
}

impl Drop for Portal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in the portal's start-up line ("… running on http://ADDR").
fn listening_addr(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("running on http://")?;
    let addr: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | ':'))
        .collect();
    (!addr.is_empty()).then_some(addr)
}

/// Starts the binary with `vars` on port 0 and returns once it has said which
/// port it listens on. The portal picks the port itself: a port probed free
/// beforehand can be taken by a parallel test before the portal binds it, and
/// a test could then talk to another test's portal.
fn spawn(vars: &[(&str, &str)]) -> Portal {
    let mut vars = vars.to_vec();
    vars.push(("PLANSHARE_PORTAL_ADDR", "127.0.0.1:0"));
    let mut child = command(&vars)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (found, addr) = mpsc::channel();
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(addr) = listening_addr(&line) {
                let _ = found.send(addr);
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut portal = Portal {
        child,
        base: String::new(),
        log: Some(log),
    };
    match addr.recv_timeout(Duration::from_secs(20)) {
        Ok(addr) => portal.base = format!("http://{addr}"),
        Err(RecvTimeoutError::Disconnected) => {
            let status = portal.child.wait().unwrap();
            panic!(
                "planshare-portal exited ({status}) before listening: {}",
                portal.stderr()
            );
        }
        Err(RecvTimeoutError::Timeout) => panic!("planshare-portal never listened"),
    }
    portal
}

/// Waits for `child` to exit, at most `limit`.
fn wait(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "planshare-portal did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .map_or("", |v| v.to_str().unwrap())
}

fn assert_secured(response: &reqwest::Response, what: &str) {
    let csp = header(response, "content-security-policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
    ] {
        assert!(csp.contains(directive), "{what}: {directive} not in {csp}");
    }
    assert_eq!(header(response, "referrer-policy"), "no-referrer", "{what}");
    assert_eq!(
        header(response, "x-content-type-options"),
        "nosniff",
        "{what}"
    );
}

#[tokio::test]
async fn serves_the_app_for_any_get_with_config_assets_and_headers() {
    let portal = spawn(&[
        (
            "PLANSHARE_PORTAL_PASTE_API_URL",
            "https://paste.example.com",
        ),
        (
            "PLANSHARE_PORTAL_ALLOWED_PASTE_APIS",
            "https://other.example.com, http://127.0.0.1:19433",
        ),
        ("PLANSHARE_SHARE_BASE_URL", "https://share.example.com"),
        (
            "PLANSHARE_PORTAL_CALLBACK_ORIGINS",
            "https://bot.example.com/",
        ),
    ]);
    let client = reqwest::Client::new();
    let get = |path: &str| client.get(format!("{}{path}", portal.base)).send();

    // The app, to API-style requests too (no Accept: text/html), and SPA
    // fallback for other page paths.
    let mut index = String::new();
    for path in ["/", "/p/AbCdEf12", "/p/AbCdEf12?x=1", "/some/page"] {
        let response = get(path).await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_secured(&response, path);
        assert_eq!(
            header(&response, "content-type"),
            "text/html; charset=utf-8",
            "{path}"
        );
        assert_eq!(header(&response, "cache-control"), "no-cache", "{path}");
        let body = response.text().await.unwrap();
        assert!(body.contains("<script type=\"module\""), "{path}: {body}");
        index = body;
    }
    let csp_of_index = header(&get("/").await.unwrap(), "content-security-policy").to_owned();
    for origin in [
        "https://paste.example.com",
        "https://other.example.com",
        "http://127.0.0.1:19433",
        "https://bot.example.com",
    ] {
        assert!(csp_of_index.contains(origin), "{origin} in {csp_of_index}");
    }
    assert!(csp_of_index.contains("frame-src 'self'"), "{csp_of_index}");

    let config = get("/config.json").await.unwrap();
    assert_eq!(config.status(), 200);
    assert_secured(&config, "/config.json");
    assert_eq!(
        header(&config, "content-type"),
        "application/json; charset=utf-8"
    );
    let config: serde_json::Value = config.json().await.unwrap();
    assert_eq!(
        config,
        serde_json::json!({
            "pasteApiUrl": "https://paste.example.com",
            "allowedPasteApis": ["https://other.example.com", "http://127.0.0.1:19433"],
            "shareBaseUrl": "https://share.example.com",
            "callbackOrigins": ["https://bot.example.com"],
        })
    );

    // Every asset the page names is there, immutable.
    let assets: Vec<&str> = index
        .split('"')
        .filter(|s| s.starts_with("/assets/"))
        .collect();
    assert!(assets.len() >= 3, "{index}");
    for path in assets {
        let response = get(path).await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_secured(&response, path);
        assert!(header(&response, "cache-control").contains("immutable"));
    }

    // The raw-HTML frame document, with its own CSP.
    let frame = get("/frame").await.unwrap();
    assert_eq!(frame.status(), 200);
    let csp = header(&frame, "content-security-policy");
    assert!(csp.contains("sandbox allow-scripts") && csp.contains("style-src 'unsafe-inline'"));
    assert!(!csp.contains("allow-same-origin"), "{csp}");

    // The icon browsers ask for on their own: the portal's SVG.
    let icon = get("/favicon.ico").await.unwrap();
    assert_eq!(icon.status(), 200);
    assert_secured(&icon, "/favicon.ico");
    assert_eq!(header(&icon, "content-type"), "image/svg+xml");
    assert!(icon.text().await.unwrap().contains("<svg"));

    // Files that are not there: 404, with the headers.
    for path in [
        "/assets/nope.0123456789.js",
        "/assets/app.js",
        "/apple-touch-icon.png",
    ] {
        let response = get(path).await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
        assert_secured(&response, path);
    }
    // Other methods: 405, with the headers.
    for path in ["/", "/p/AbCdEf12", "/config.json", "/api/paste"] {
        let response = client
            .post(format!("{}{path}", portal.base))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{path}");
        assert_eq!(header(&response, "allow"), "GET, HEAD", "{path}");
        assert_secured(&response, path);
    }
    // HEAD answers like GET, without a body.
    let head = client
        .head(format!("{}/p/AbCdEf12", portal.base))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_secured(&head, "HEAD");
}

#[test]
fn bad_configuration_exits_non_zero_naming_the_setting() {
    let cases: [(&[(&str, &str)], &str); 5] = [
        (
            &[("PLANSHARE_PORTAL_ADDR", "localhost")],
            "PLANSHARE_PORTAL_ADDR",
        ),
        (
            &[("PLANSHARE_PORTAL_PASTE_API_URL", "javascript:alert(1)")],
            "PLANSHARE_PORTAL_PASTE_API_URL",
        ),
        (
            &[("PLANSHARE_PORTAL_PASTE_API_URL", "")],
            "PLANSHARE_PORTAL_PASTE_API_URL",
        ),
        (
            &[(
                "PLANSHARE_PORTAL_ALLOWED_PASTE_APIS",
                "https://ok.example,ftp://x",
            )],
            "PLANSHARE_PORTAL_ALLOWED_PASTE_APIS",
        ),
        (
            &[("PLANSHARE_SHARE_BASE_URL", "share.example.com")],
            "PLANSHARE_SHARE_BASE_URL",
        ),
    ];
    for (vars, named) in cases {
        let output: Output = command(vars).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{vars:?}: {stderr}");
        assert!(
            stderr.starts_with("planshare-portal: ") && stderr.contains(named),
            "{vars:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{vars:?}");
    }
    // A flag is checked like its variable.
    let output = command(&[])
        .args(["--share-base-url", "nope"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--share-base-url"));
    // An address in use.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let output = command(&[("PLANSHARE_PORTAL_ADDR", &addr)])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(&format!("cannot listen on {addr}")),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[cfg(unix)]
#[test]
fn sigterm_drains_and_exits_zero() {
    let mut portal = spawn(&[]);
    // A request is served first (a connection is open when the signal comes).
    let mut stream = TcpStream::connect(portal.base.trim_start_matches("http://")).unwrap();
    std::io::Write::write_all(
        &mut stream,
        b"GET /config.json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let killed = Command::new("kill")
        .args(["-TERM", &portal.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait(&mut portal.child, Duration::from_secs(15));
    assert!(status.success(), "{status}");
    let stderr = portal.stderr();
    assert!(stderr.contains("shutdown signal received"), "{stderr}");
}

#[test]
fn sizes_prints_every_asset_and_the_js_and_css_total() {
    let output = command(&[]).arg("sizes").output().unwrap();
    assert!(output.status.success());
    let table = String::from_utf8(output.stdout).unwrap();
    let numbers = |line: &str| -> Vec<u64> {
        line.split_whitespace()
            .rev()
            .take(3)
            .map(|n| n.parse().unwrap())
            .collect()
    };
    let mut js_css = [0u64; 3];
    for line in table.lines().skip(1) {
        if line.starts_with("total") {
            continue;
        }
        let path = line.split_whitespace().next().unwrap();
        let [brotli, gzip, raw] = numbers(line)[..] else {
            panic!("{line}")
        };
        assert!(raw > 0 && gzip > 0 && brotli > 0, "{line}");
        if path.ends_with(".js") || path.ends_with(".mjs") || path.ends_with(".css") {
            js_css[0] += raw;
            js_css[1] += gzip;
            js_css[2] += brotli;
            assert!(brotli < raw && gzip < raw, "{line}");
        }
    }
    for name in [
        "/assets/highlight.min.",
        "/assets/highlight.",
        "/assets/frame.",
        "/assets/app.",
        "/assets/plan-view.",
    ] {
        assert!(table.contains(name), "{name} in {table}");
    }
    let total = table
        .lines()
        .find(|l| l.starts_with("total JS + CSS"))
        .unwrap();
    let [brotli, gzip, raw] = numbers(total)[..] else {
        panic!("{total}")
    };
    assert_eq!([raw, gzip, brotli], js_css, "{table}");
    assert!(table.lines().any(|l| l.starts_with("total embedded")));
}

#[test]
fn probe_exits_zero_while_the_portal_serves_and_one_otherwise() {
    let portal = spawn(&[]);
    let addr = portal.base.trim_start_matches("http://").to_owned();
    let probe = |args: &[&str]| {
        command(&[("PLANSHARE_PORTAL_ADDR", addr.as_str())])
            .arg("probe")
            .args(args)
            .output()
            .unwrap()
    };
    let healthy = probe(&[]);
    assert!(healthy.status.success(), "{healthy:?}");
    assert!(
        String::from_utf8_lossy(&healthy.stdout).contains("/config.json: HTTP 200"),
        "{healthy:?}"
    );
    let missing = probe(&["--path", "/assets/nope.js"]);
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("answered HTTP 404"),
        "{missing:?}"
    );
    drop(portal);
    let down = probe(&[]);
    assert_eq!(down.status.code(), Some(1), "{down:?}");
    assert!(
        String::from_utf8_lossy(&down.stderr).contains("no answer"),
        "{down:?}"
    );
}

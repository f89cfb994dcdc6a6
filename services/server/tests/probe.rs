//! `planshare-server probe`, the container health check: exit 0 while the
//! server configured by the same settings answers 2xx on the path, 1 with a
//! one-line reason otherwise (a non-2xx answer, nothing listening).

#![allow(clippy::unwrap_used)]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_planshare-server");

fn with_settings<'a>(
    command: &'a mut Command,
    port: u16,
    data: &std::path::Path,
) -> &'a mut Command {
    command
        .env_clear()
        .env("PLANSHARE_HOST", "127.0.0.1")
        .env("PLANSHARE_PORT", port.to_string())
        .env("PLANSHARE_DATA_DIR", data)
}

fn probe(port: u16, data: &std::path::Path, args: &[&str]) -> Output {
    with_settings(&mut Command::new(BIN), port, data)
        .arg("probe")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn probe_follows_the_server_it_is_configured_for() {
    let data = tempfile::tempdir().unwrap();
    let port = testkit::free_port();
    let mut server = with_settings(&mut Command::new(BIN), port, data.path())
        .env("PLANSHARE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let healthy = loop {
        let out = probe(port, data.path(), &[]);
        if out.status.success() || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(healthy.status.success(), "{healthy:?}");
    assert_eq!(
        String::from_utf8_lossy(&healthy.stdout),
        format!("http://127.0.0.1:{port}/healthz: HTTP 200\n")
    );
    let ready = probe(port, data.path(), &["--path", "/readyz"]);
    assert!(ready.status.success(), "{ready:?}");

    let missing = probe(port, data.path(), &["--path", "/nope"]);
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        format!("planshare-server probe: http://127.0.0.1:{port}/nope: answered HTTP 404\n")
    );

    server.kill().unwrap();
    server.wait().unwrap();
    let down = probe(port, data.path(), &[]);
    assert_eq!(down.status.code(), Some(1), "{down:?}");
    assert!(
        String::from_utf8_lossy(&down.stderr).contains("no answer: cannot connect"),
        "{down:?}"
    );

    // Settings that do not load: exit 1 naming the setting.
    let bad = with_settings(&mut Command::new(BIN), port, data.path())
        .env("PLANSHARE_PORT", "not-a-port")
        .arg("probe")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1), "{bad:?}");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("PLANSHARE_PORT"),
        "{bad:?}"
    );
}

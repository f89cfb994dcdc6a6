//! HTTPS served by the server binary itself (`server.tls_cert` /
//! `server.tls_key`), with certificates made here (rcgen, self-signed for
//! `localhost` and 127.0.0.1) and a real TLS client (reqwest on rustls)
//! that trusts only them: a paste round-trips and the probes answer over
//! HTTPS, plain HTTP on that port is refused, a client that never completes
//! a handshake is dropped at the first-byte deadline, renewed files are
//! served without a restart while damaged ones are not, and `check-config`
//! names the file that does not load.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testkit::ChildServer;

const BIN: &str = env!("CARGO_BIN_EXE_planshare-server");

/// A certificate and its key, as PEM, and the certificate's DER (what a
/// client is presented).
struct Pair {
    cert_pem: String,
    key_pem: String,
    der: Vec<u8>,
}

fn new_pair() -> Pair {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    Pair {
        cert_pem: cert.pem(),
        key_pem: signing_key.serialize_pem(),
        der: cert.der().to_vec(),
    }
}

/// The two files of a running server, in its own directory.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new(pair: &Pair) -> Files {
        let files = Files {
            dir: tempfile::tempdir().unwrap(),
        };
        files.write(pair);
        files
    }

    fn cert(&self) -> PathBuf {
        self.dir.path().join("fullchain.pem")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("privkey.pem")
    }

    /// Rewrites both files in place (certificate first), as `cp` would.
    fn write(&self, pair: &Pair) {
        std::fs::write(self.cert(), &pair.cert_pem).unwrap();
        std::fs::write(self.key(), &pair.key_pem).unwrap();
    }
}

/// `planshare-server` with the settings of a test server on `port`.
fn command(port: u16, data: &Path, files: &Files) -> Command {
    let mut command = Command::new(BIN);
    command
        .env_clear()
        .env("PLANSHARE_HOST", "127.0.0.1")
        .env("PLANSHARE_PORT", port.to_string())
        .env("PLANSHARE_DATA_DIR", data)
        .env("PLANSHARE_TLS_CERT", files.cert())
        .env("PLANSHARE_TLS_KEY", files.key())
        .stdin(Stdio::null());
    command
}

/// A server running with HTTPS; its log goes to `log`.
struct Running {
    process: ChildServer,
    port: u16,
    log: PathBuf,
    _data: tempfile::TempDir,
}

impl Running {
    async fn start(files: &Files, trusted: &[&Pair], config: Option<&Path>) -> Running {
        let data = tempfile::tempdir().unwrap();
        let log = data.path().join("server.log");
        let port = testkit::free_port();
        let mut command = command(port, data.path(), files);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        command
            .env("PLANSHARE_LOG", "info")
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap());
        let process = ChildServer::spawn(&mut command);
        let running = Running {
            process,
            port,
            log,
            _data: data,
        };
        let client = client(trusted);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = client.get(running.url("/readyz")).send().await;
            if ready.is_ok_and(|r| r.status() == 200) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "not ready over HTTPS; log:\n{}",
                running.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        running
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// A client that trusts exactly `trusted`, opens a new connection for
/// every request (so each one shows the certificate served now) and
/// reports the certificate it was presented.
fn client(trusted: &[&Pair]) -> reqwest::Client {
    let roots = trusted
        .iter()
        .map(|pair| reqwest::Certificate::from_pem(pair.cert_pem.as_bytes()).unwrap());
    reqwest::Client::builder()
        .tls_certs_only(roots)
        .tls_info(true)
        .pool_max_idle_per_host(0)
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// The certificate a new connection is presented, read off a `/healthz`,
/// by a new client trusting `trusted` (a client of its own: a client that
/// connected before resumes its TLS session, and a resumed session
/// presents no certificate, the client reports the first one again).
async fn presented(trusted: &[&Pair], running: &Running) -> Vec<u8> {
    let response = client(trusted)
        .get(running.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let info = response.extensions().get::<reqwest::tls::TlsInfo>();
    info.and_then(|info| info.peer_certificate())
        .expect("a TLS connection presents a certificate")
        .to_vec()
}

async fn create_and_read(client: &reqwest::Client, running: &Running, data: &str) {
    let created = client
        .post(running.url("/api/paste"))
        .header("content-type", "application/json")
        .body(serde_json::json!({ "data": data }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let id = created.json::<serde_json::Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = client
        .get(running.url(&format!("/api/paste/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    let body: serde_json::Value = read.json().await.unwrap();
    assert_eq!(body["data"], data);
}

#[tokio::test]
async fn pastes_and_probes_over_https_and_plain_http_is_refused() {
    let pair = new_pair();
    let files = Files::new(&pair);
    // A short first-byte deadline, to see a stalled handshake dropped.
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("planshare.toml");
    std::fs::write(&config, "[server]\nfirst_byte_timeout_secs = 1\n").unwrap();
    let running = Running::start(&files, &[&pair], Some(&config)).await;
    let client = client(&[&pair]);

    create_and_read(&client, &running, "over https").await;
    for probe in ["/healthz", "/readyz"] {
        let answer = client.get(running.url(probe)).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{probe}");
    }
    assert_eq!(presented(&[&pair], &running).await, pair.der);

    // Plain HTTP to the HTTPS port: a 400 saying to use https://, nothing served.
    let plain = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let answer = plain
        .get(format!("http://127.0.0.1:{}/healthz", running.port))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 400);
    let text = answer.text().await.unwrap();
    assert!(text.contains("https://"), "{text}");
    let created = plain
        .post(format!("http://127.0.0.1:{}/api/paste", running.port))
        .header("content-type", "application/json")
        .body(r#"{"data":"over plain http"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 400, "not served over plain HTTP");

    // A client that starts a handshake (one byte of a TLS record) and
    // stalls is dropped at the first-byte deadline (1 s), as is a silent one.
    for sent in [&[0x16u8][..], &[][..]] {
        let mut stalled = TcpStream::connect(("127.0.0.1", running.port)).unwrap();
        stalled.write_all(sent).unwrap();
        stalled
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let started = Instant::now();
        let mut buf = [0u8; 64];
        let closed = stalled.read(&mut buf);
        assert!(
            matches!(closed, Ok(0))
                || closed.is_err_and(|e| e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::TimedOut),
            "sent {sent:?}: closed by the server"
        );
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "sent {sent:?}: dropped at the deadline, not left open"
        );
    }
    // And the server still serves.
    create_and_read(&client, &running, "after the stalled ones").await;

    // The container health check speaks HTTPS to this server.
    let data = tempfile::tempdir().unwrap();
    let probe = command(running.port, data.path(), &files)
        .arg("probe")
        .output()
        .unwrap();
    assert!(probe.status.success(), "{probe:?}");
    assert_eq!(
        String::from_utf8_lossy(&probe.stdout),
        format!("https://127.0.0.1:{}/healthz: HTTP 200\n", running.port)
    );
    let log = running.log();
    assert!(
        !log.contains(pair.key_pem.trim()),
        "the key is never logged"
    );
    drop(running);
}

/// Polls `until` every 100 ms for up to `within`; whether it came true.
async fn eventually<F, Fut>(within: Duration, mut until: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if until().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn renewed_files_are_served_without_a_restart_and_damaged_ones_are_not() {
    let (old, new) = (new_pair(), new_pair());
    let files = Files::new(&old);
    let mut running = Running::start(&files, &[&old], None).await;
    let client = client(&[&old, &new]);
    assert_eq!(presented(&[&old, &new], &running).await, old.der);
    let pid = running.process.id();

    // Renewal: both files rewritten in place. The server looks every 5 s.
    files.write(&new);
    let (o, r, n) = (&old, &running, &new);
    let renewed = eventually(Duration::from_secs(12), move || async move {
        presented(&[o, n], r).await == n.der
    })
    .await;
    assert!(
        renewed,
        "the new certificate is not served; log:\n{}",
        running.log()
    );
    assert_eq!(running.process.id(), pid, "the same process");
    let log = running.log();
    assert!(
        log.contains("TLS certificate reloaded"),
        "the reload is logged:\n{log}"
    );
    // Clients that trust only the new certificate connect now.
    create_and_read(&client_for(&new), &running, "after the renewal").await;

    // A damaged certificate file: the one in use keeps serving, and the
    // warning names the file.
    std::fs::write(
        files.cert(),
        "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n",
    )
    .unwrap();
    let cert = files.cert().display().to_string();
    let watched = &running;
    let warned = |count: usize| {
        let cert = cert.clone();
        move || {
            let log = watched.log();
            let warnings = log
                .lines()
                .filter(|line| {
                    line.contains("TLS certificate not reloaded") && line.contains(&cert)
                })
                .count();
            async move { warnings >= count }
        }
    };
    assert!(
        eventually(Duration::from_secs(12), warned(1)).await,
        "no warning naming {cert}; log:\n{}",
        running.log()
    );
    assert_eq!(presented(&[&old, &new], &running).await, new.der);
    create_and_read(&client, &running, "with a damaged file on disk").await;

    // SIGHUP loads the files again at once, although they did not change
    // since (the poll alone would not try them again): a second warning.
    let hup = Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    assert!(
        eventually(Duration::from_secs(4), warned(2)).await,
        "SIGHUP did not reload; log:\n{}",
        running.log()
    );
    assert_eq!(presented(&[&old, &new], &running).await, new.der);

    let log = running.log();
    for pair in [&old, &new] {
        assert!(
            !log.contains(pair.key_pem.trim()),
            "the key is never logged"
        );
    }
    assert!(running.process.terminate(Duration::from_secs(20)).await);
}

fn client_for(pair: &Pair) -> reqwest::Client {
    client(&[pair])
}

/// Runs `check-config` with the files; its exit code and stderr.
fn check_config(cert: Option<&Path>, key: Option<&Path>) -> (Option<i32>, String, String) {
    let data = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command
        .env_clear()
        .env("PLANSHARE_DATA_DIR", data.path())
        .arg("check-config");
    if let Some(cert) = cert {
        command.env("PLANSHARE_TLS_CERT", cert);
    }
    if let Some(key) = key {
        command.env("PLANSHARE_TLS_KEY", key);
    }
    let out = command.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn check_config_names_the_file_that_does_not_load() {
    let (pair, other) = (new_pair(), new_pair());
    let files = Files::new(&pair);
    let (cert, key) = (files.cert(), files.key());

    let (code, stdout, stderr) = check_config(Some(&cert), Some(&key));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("tls_cert = {:?}", cert.display().to_string())),
        "{stdout}"
    );

    let missing = files.dir.path().join("missing-key.pem");
    let (code, _, stderr) = check_config(Some(&cert), Some(&missing));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "server.tls_key {}: cannot read it",
            missing.display()
        )),
        "{stderr}"
    );

    let (code, _, stderr) = check_config(Some(&cert), None);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("server.tls_key (PLANSHARE_TLS_KEY) is not"),
        "{stderr}"
    );

    // The key of another certificate.
    let stray = files.dir.path().join("other-key.pem");
    std::fs::write(&stray, &other.key_pem).unwrap();
    let (code, _, stderr) = check_config(Some(&cert), Some(&stray));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("server.tls_key {}", stray.display()))
            && stderr.contains("does not belong to the certificate"),
        "{stderr}"
    );

    // The two files swapped: neither holds what its setting wants.
    let (code, _, stderr) = check_config(Some(&key), Some(&cert));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "server.tls_cert {}: no certificate in it",
            key.display()
        )),
        "{stderr}"
    );

    // A key file cut off: named, and none of it printed.
    let cut = files.dir.path().join("cut-key.pem");
    let half = &pair.key_pem[..pair.key_pem.len() / 2];
    std::fs::write(&cut, half).unwrap();
    let (code, _, stderr) = check_config(Some(&cert), Some(&cut));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("server.tls_key {}: not valid PEM", cut.display())),
        "{stderr}"
    );
    let secret_line = half.lines().nth(1).unwrap();
    assert!(!stderr.contains(secret_line), "{stderr}");

    // `serve` refuses the same files at start-up, with the same message.
    let data = tempfile::tempdir().unwrap();
    let mut serve = command(testkit::free_port(), data.path(), &files);
    serve
        .env("PLANSHARE_TLS_KEY", &missing)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = serve.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve started with a missing key file");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot serve HTTPS") && stderr.contains(&missing.display().to_string()),
        "{stderr}"
    );
}

/// A review created over HTTPS: its events path and owner token.
async fn new_review(client: &reqwest::Client, running: &Running) -> (String, String) {
    let created = client
        .post(running.url("/api/v1/reviews"))
        .header("content-type", "application/json")
        .body(
            serde_json::json!({"version": {"data": "v1", "digest": format!("d{:0>42}", 1)}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let body: serde_json::Value = created.json().await.unwrap();
    let id = body["id"].as_str().unwrap();
    let owner = body["ownerToken"].as_str().unwrap().to_owned();
    (format!("/api/v1/reviews/{id}/events"), owner)
}

/// The status of a long poll that answers at once (`wait=0`): 200 while
/// the link has a stream place free, 429 while its one place is held.
async fn poll_status(
    client: &reqwest::Client,
    running: &Running,
    events: &str,
    owner: &str,
) -> u16 {
    client
        .get(running.url(&format!("{events}?wait=0")))
        .bearer_auth(owner)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Over TLS the stream handlers learn that their client left through the
/// TLS stream's read side (a peek at the TCP socket would see the
/// `close_notify` record as data): a client that closes its side with
/// `close_notify` and keeps its socket open, and a client that just drops
/// its connection, each give the link's one stream place back at once —
/// keep-alives are a minute apart, so only that news can free it.
#[tokio::test]
async fn a_client_that_leaves_an_event_stream_over_tls_gives_its_place_back() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let pair = new_pair();
    let files = Files::new(&pair);
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("planshare.toml");
    std::fs::write(
        &config,
        "[reviews]\nstreams_per_link = 1\nkeep_alive_secs = 60\n",
    )
    .unwrap();
    let running = Running::start(&files, &[&pair], Some(&config)).await;
    let client = client(&[&pair]);
    let (events, owner) = new_review(&client, &running).await;
    let freed = |what: &'static str| {
        let (client, running, events, owner) = (&client, &running, &events, &owner);
        async move {
            let started = Instant::now();
            loop {
                if poll_status(client, running, events, owner).await == 200 {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(3),
                    "{what}: the place of a client that left is still held"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };

    // A raw TLS client: the request, the stream's head, then close_notify
    // and the TCP write side shut, the socket kept open.
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(pair.der.clone()))
        .unwrap();
    let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(tls));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", running.port))
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut stream = connector.connect(name, tcp).await.unwrap();
    let request = format!(
        "GET {events} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {owner}\r\naccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "the stream's head");
        head.extend_from_slice(&buf[..n]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    assert_eq!(
        poll_status(&client, &running, &events, &owner).await,
        429,
        "the stream holds the link's one place"
    );
    stream.shutdown().await.unwrap();
    freed("close_notify").await;
    drop(stream);

    // reqwest: an SSE stream whose client is dropped with its connection.
    let holder = client_for(&pair);
    let open = holder
        .get(running.url(&events))
        .bearer_auth(&owner)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(open.status(), 200);
    assert_eq!(poll_status(&client, &running, &events, &owner).await, 429);
    drop(open);
    drop(holder);
    freed("dropped connection").await;
    drop(running);
}

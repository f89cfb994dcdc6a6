//! Test-only helpers (a dev-dependency, never a normal one): start
//! `planshare-server` in-process on a free loopback port with its own
//! temporary data directory, and talk to it. Also: a server binary as a
//! child process ([`ChildServer`]), raw HTTP/1.1 for requests a client
//! library would refuse ([`raw`]), a TCP fault proxy between the server and
//! a backend ([`proxy`]), the recorded upstream vectors
//! ([`upstream_vectors`]) and headless Chromium for the portal ([`browser`]).
//!
//! The listener is bound before the server task starts, so tests never sleep
//! waiting for it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use paste_store::conformance::env;
use paste_store::{StoreConfig, StoreKind};
use planshare_server::{Server, Settings};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Settings for a test server: defaults plus the given environment variables
/// (upstream or `PLANSHARE_*`, as an operator would set them), listening on
/// 127.0.0.1 with the data directory inside `data_dir`, rate limits off
/// unless `vars` set `PLANSHARE_RATE_LIMITS=on`, on the store backend
/// that `PLANSHARE_TEST_STORE` names ([`test_store`]) unless `vars` choose one.
pub fn settings_from_env(data_dir: &Path, vars: &[(&str, &str)]) -> Settings {
    let mut vars_map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    vars_map
        .entry("PLANSHARE_DATA_DIR".into())
        .or_insert_with(|| data_dir.display().to_string());
    vars_map.insert("PLANSHARE_HOST".into(), "127.0.0.1".into());
    // Suites hammer from one address; tests of the limiters turn them on.
    vars_map
        .entry("PLANSHARE_RATE_LIMITS".into())
        .or_insert_with(|| "off".into());
    let mut settings = Settings::load(None, &|name| vars_map.get(name).cloned())
        .unwrap_or_else(|e| panic!("test settings do not load: {e}"));
    if !vars_map.contains_key("PLANSHARE_STORE") {
        use_test_store(&mut settings.store);
    }
    settings
}

/// The backend the suites run on: `PLANSHARE_TEST_STORE` = `fs` (default),
/// `redis`, `s3` or `memory`.
pub fn test_store() -> StoreKind {
    match std::env::var("PLANSHARE_TEST_STORE") {
        Err(_) => StoreKind::Fs,
        Ok(name) => name
            .parse()
            .unwrap_or_else(|e| panic!("PLANSHARE_TEST_STORE: {e}")),
    }
}

/// Points `store` at the test backend, each server with a key prefix of its
/// own (Redis, S3), so tests never see each other's pastes.
fn use_test_store(store: &mut StoreConfig) {
    store.kind = test_store();
    let missing = |what: &str| -> ! {
        panic!("PLANSHARE_TEST_STORE asks for {what} but none is configured (run scripts/test)")
    };
    match store.kind {
        StoreKind::Redis => store.redis = env::redis().unwrap_or_else(|| missing("Redis")),
        StoreKind::S3 => store.s3 = env::s3().unwrap_or_else(|| missing("an S3 server")),
        StoreKind::Fs | StoreKind::Memory => {}
    }
}

/// A running server and what a test needs to reach it.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`
    pub base_url: String,
    /// The bound address.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:<port>` of the separate admin listener, when
    /// `admin.addr` is set (use `127.0.0.1:0`).
    pub admin_url: Option<String>,
    /// The settings it runs with.
    pub settings: Settings,
    /// A client without connection reuse surprises (plain HTTP/1.1).
    pub client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), String>>>,
    _dir: Option<tempfile::TempDir>,
}

impl TestApp {
    /// Starts a server with the default settings and `vars` in a fresh
    /// temporary directory.
    pub async fn spawn(vars: &[(&str, &str)]) -> TestApp {
        TestApp::spawn_configured(vars, |_| {}).await
    }

    /// Like [`TestApp::spawn`], then lets `adjust` change settings that have
    /// no environment variable.
    pub async fn spawn_configured(
        vars: &[(&str, &str)],
        adjust: impl FnOnce(&mut Settings),
    ) -> TestApp {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut settings = settings_from_env(dir.path(), vars);
        adjust(&mut settings);
        let mut app = TestApp::spawn_with(settings).await;
        app._dir = Some(dir);
        app
    }

    /// Starts a server with exactly `settings` (host and port are replaced by
    /// 127.0.0.1:0).
    pub async fn spawn_with(settings: Settings) -> TestApp {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("local_addr: {e}"));
        let server = Server::build(&settings)
            .await
            .unwrap_or_else(|e| panic!("server does not build: {e:#}"));
        let admin_addr = server.admin_addr();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            server
                .run(listener, async {
                    let _ = rx.await;
                })
                .await
                .map_err(|e| format!("{e:#}"))
        });
        TestApp {
            base_url: format!("http://{addr}"),
            addr,
            admin_url: admin_addr.map(|a| format!("http://{a}")),
            settings,
            client: reqwest::Client::builder()
                // The server closes a keep-alive connection after its
                // header-read timeout (10 s); a pooled one kept longer can
                // be reused just as it closes (IncompleteMessage).
                .pool_idle_timeout(std::time::Duration::from_secs(5))
                .build()
                .unwrap_or_else(|e| panic!("client: {e}")),
            shutdown: Some(tx),
            task: Some(task),
            _dir: None,
        }
    }

    /// `base_url` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// The fs store's directory.
    pub fn store_dir(&self) -> PathBuf {
        self.settings.store.fs.path.clone()
    }

    /// `POST /api/paste` with `{"data": data}`; returns the response.
    pub async fn create(&self, data: &str) -> reqwest::Response {
        self.client
            .post(self.url("/api/paste"))
            .header("content-type", "application/json")
            .body(serde_json::json!({ "data": data }).to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST /api/paste: {e}"))
    }

    /// Creates a paste and returns the parsed 201 body.
    pub async fn create_ok(&self, data: &str) -> serde_json::Value {
        let response = self.create(data).await;
        assert_eq!(response.status(), 201, "create");
        response
            .json()
            .await
            .unwrap_or_else(|e| panic!("create body: {e}"))
    }

    /// `GET /api/paste/{id}`.
    pub async fn get(&self, id: &str) -> reqwest::Response {
        self.client
            .get(self.url(&format!("/api/paste/{id}")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET /api/paste/{id}: {e}"))
    }

    /// `GET` of any path (probes and the like).
    pub async fn get_path(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// Asks the server to shut down gracefully and waits until it has.
    pub async fn shutdown(mut self) -> Result<(), String> {
        self.stop().await
    }

    async fn stop(&mut self) -> Result<(), String> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(|e| e.to_string())?,
            None => Ok(()),
        }
    }

    /// Signals shutdown without waiting; returns the server task.
    pub fn begin_shutdown(&mut self) -> Option<JoinHandle<Result<(), String>>> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.task.take()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

pub mod browser;
mod child;
pub use child::{ChildServer, wait_ready};
pub mod proxy;
pub mod tree;

/// A loopback port that was free a moment ago (for child processes that
/// must be told their port; in-process servers bind port 0 instead).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// The upstream test vectors of `kind` (from `testdata/`).
pub fn upstream_vectors(kind: &str) -> Vec<serde_json::Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/upstream-share-vectors.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let all: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    all["vectors"]
        .as_array()
        .map(|v| v.iter().filter(|v| v["kind"] == kind).cloned().collect())
        .unwrap_or_default()
}

/// Raw HTTP/1.1 over a socket, for requests a client library would refuse or
/// normalise (`..` in paths, conflicting lengths, oversized heads).
pub mod raw {
    use std::net::SocketAddr;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// A parsed response.
    #[derive(Debug)]
    pub struct RawResponse {
        /// Status code (0 when the server closed without answering).
        pub status: u16,
        /// Header names lower-cased, in order.
        pub headers: Vec<(String, String)>,
        /// The body as text.
        pub body: String,
    }

    impl RawResponse {
        /// The first value of header `name` (lower case).
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        }
    }

    /// Sends `request` as is (it should say `Connection: close`) and reads
    /// until the server closes or 10 s pass.
    pub async fn send(addr: SocketAddr, request: &[u8]) -> RawResponse {
        let mut stream = TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"));
        // The server may answer and close before it has read everything.
        let _ = stream.write_all(request).await;
        let mut buf = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut buf)).await;
        parse(&buf)
    }

    /// Sends `GET`-style requests with just a method and a path.
    pub async fn simple(addr: SocketAddr, method: &str, path: &str) -> RawResponse {
        let request =
            format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        send(addr, request.as_bytes()).await
    }

    /// Parses an answer read off a socket (status 0 when it has no head).
    pub fn parse(buf: &[u8]) -> RawResponse {
        let text = String::from_utf8_lossy(buf);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return RawResponse {
                status: 0,
                headers: Vec::new(),
                body: text.into_owned(),
            };
        };
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        RawResponse {
            status,
            headers,
            body: body.to_owned(),
        }
    }
}

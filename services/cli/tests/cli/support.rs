//! Running the binary, and a recording stub paste service.

use std::collections::VecDeque;
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// The result of one CLI run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `planshare args…` with exactly `env` (plus PATH) and `stdin`.
pub async fn planshare(args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let stdin = stdin.to_owned();
    let output: Output = tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_planshare"))
            .args(&args)
            .env_clear()
            .env("HOME", home.path())
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The command may exit before reading its input (e.g. on a usage error).
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// One request as the stub received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub at: Instant,
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Recorded {
    /// Everything the client sent, as text, for "the key is never sent" checks.
    pub fn all_bytes(&self) -> String {
        let mut text = format!("{} {}\n", self.method, self.uri);
        for (k, v) in &self.headers {
            text.push_str(&format!("{k}: {}\n", String::from_utf8_lossy(v.as_bytes())));
        }
        text.push_str(&String::from_utf8_lossy(&self.body));
        text
    }
}

/// A scripted answer: status, extra headers, body.
pub type Scripted = (u16, Vec<(&'static str, String)>, String);

#[derive(Clone, Default)]
struct StubState {
    script: Arc<Mutex<VecDeque<Scripted>>>,
    fallback: Arc<Mutex<Option<Scripted>>>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

/// A paste service that answers from a script and records every request.
pub struct Stub {
    pub url: String,
    state: StubState,
}

impl Stub {
    /// Starts a stub answering `script` in order, then `fallback` forever.
    pub async fn start(script: Vec<Scripted>, fallback: Scripted) -> Stub {
        let state = StubState::default();
        *state.script.lock().unwrap() = script.into();
        *state.fallback.lock().unwrap() = Some(fallback);
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Stub {
            url: format!("http://{addr}"),
            state,
        }
    }

    /// The requests received so far.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.state.recorded.lock().unwrap().clone()
    }
}

async fn answer(
    State(state): State<StubState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.recorded.lock().unwrap().push(Recorded {
        at: Instant::now(),
        method,
        uri,
        headers,
        body,
    });
    let next = state.script.lock().unwrap().pop_front();
    let (status, headers, body) =
        next.unwrap_or_else(|| state.fallback.lock().unwrap().clone().unwrap());
    let mut response = (StatusCode::from_u16(status).unwrap(), body).into_response();
    response.headers_mut().insert(
        "content-type",
        "application/json;charset=utf-8".parse().unwrap(),
    );
    for (k, v) in headers {
        response.headers_mut().insert(k, v.parse().unwrap());
    }
    response
}

/// What an endless answer's server saw: the bytes it wrote before the
/// client went away.
pub struct Endless {
    pub url: String,
    written: tokio::sync::oneshot::Receiver<u64>,
}

impl Endless {
    /// Serves one request with `200`, no length, and a JSON body that never
    /// ends (`{"data":"AAAA…`), written until the client closes.
    pub async fn start() -> Endless {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (done, written) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.unwrap();
                assert!(n > 0, "the request ended early");
                request.extend_from_slice(&buf[..n]);
            }
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"data\":\"";
            socket.write_all(head.as_bytes()).await.unwrap();
            let chunk = vec![b'A'; 64 * 1024];
            let mut total = 0u64;
            while socket.write_all(&chunk).await.is_ok() {
                total += chunk.len() as u64;
            }
            let _ = done.send(total);
        });
        Endless { url, written }
    }

    /// The body bytes written before the client closed the connection.
    pub async fn written(self) -> u64 {
        self.written.await.unwrap()
    }
}

/// What a [`FakeReview`]'s event stream sends.
pub enum Events {
    /// These bytes, then the connection closes.
    Frames(String),
    /// `data: xxx…` lines and never a blank line, until the client goes
    /// away or [`FLOOD_LIMIT`] bytes were sent (then it holds the
    /// connection open, sending nothing).
    Flood,
}

/// Where a [`FakeReview`]'s flood stops.
pub const FLOOD_LIMIT: u64 = 64 * 1024 * 1024;

/// A review API that is not planshare's, over raw TCP: every `GET
/// /api/v1/reviews/{id}` answers an open review (version 1, no comments, no
/// links) to its owner, `…/versions/1` that version (encrypted with the
/// link's key), and `…/events` answers `events`. It counts the
/// bytes its event streams sent.
pub struct FakeReview {
    /// The owner link of its review (the API is the portal's origin).
    pub link: String,
    sent: Arc<std::sync::atomic::AtomicU64>,
}

impl FakeReview {
    pub async fn start(events: Events) -> FakeReview {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let key = share_codec::ShareKey::from_bytes([7; 32]);
        let link = share_codec::review_url(&url, "fakeview", &key, &"T".repeat(43), None);
        let sent = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let events = Arc::new(events);
        let counter = sent.clone();
        tokio::spawn(async move {
            loop {
                let (socket, _) = listener.accept().await.unwrap();
                tokio::spawn(fake_review_answer(socket, events.clone(), counter.clone()));
            }
        });
        FakeReview { link, sent }
    }

    /// The bytes its event streams sent so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(std::sync::atomic::Ordering::SeqCst)
    }
}

async fn fake_review_answer(
    mut socket: tokio::net::TcpStream,
    events: Arc<Events>,
    sent: Arc<std::sync::atomic::AtomicU64>,
) {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&request);
    let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
    if path.contains("/versions/") {
        // Version 1, encrypted with the link's key (`watch` checks it opens).
        let key = share_codec::ShareKey::from_bytes([7; 32]);
        let plan = r##"{"p":"# Plan\n","a":[]}"##;
        let data = share_codec::encrypt_with(&key, &[1; 12], &share_codec::compress(plan));
        let body = format!(
            r#"{{"n":1,"digest":"{}","data":"{data}","createdAt":1}}"#,
            "D".repeat(43)
        );
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(answer.as_bytes()).await;
        return;
    }
    if !path.ends_with("/events") {
        let digest = "D".repeat(43);
        let view = format!(
            r#"{{"id":"fakeview","state":"open","you":{{"role":"owner","link":"owner","name":null}},"latest":1,"versions":[{{"n":1,"digest":"{digest}","createdAt":1,"size":1}}],"comments":[],"links":[],"seq":0,"expiresAt":4102444800}}"#
        );
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{view}",
            view.len()
        );
        let _ = socket.write_all(answer.as_bytes()).await;
        return;
    }
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    match &*events {
        Events::Frames(frames) => {
            let _ = socket.write_all(frames.as_bytes()).await;
            sent.fetch_add(frames.len() as u64, Ordering::SeqCst);
        }
        Events::Flood => {
            let line = format!("data: {}\n", "x".repeat(4090));
            let chunk = line.repeat(16);
            while sent.load(Ordering::SeqCst) < FLOOD_LIMIT {
                if socket.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
                sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
            }
            // Enough to tell: hold the connection, so no reconnect starts over.
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        }
    }
}

//! Regressions of the outside attack on the running server (issue 22): each
//! test fails on the build that was attacked.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use testkit::TestApp;
use testkit::raw;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::limits::client_from;
use crate::tenants_support as ts;

/// `POST /api/v1/pastes` anonymously on the default tenant.
async fn create_v1(app: &TestApp, body: &Value) -> Value {
    let response = app
        .client
        .post(app.url("/api/v1/pastes"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    response.json().await.unwrap()
}

/// A link preview (`HEAD`) does not burn a burn-after-read paste: it sees
/// what a read would see, and the paste stays for its one reader.
#[tokio::test]
async fn head_leaves_a_burn_after_read_paste_for_its_reader() {
    let app = TestApp::spawn(&[]).await;
    let created = create_v1(
        &app,
        &json!({"data": "read me once", "burnAfterRead": true}),
    )
    .await;
    let path = format!("/api/v1/pastes/{}", created["id"].as_str().unwrap());
    for _ in 0..3 {
        let head = app
            .client
            .request(Method::HEAD, app.url(&path))
            .send()
            .await
            .unwrap();
        assert_eq!(head.status(), 200, "HEAD of an unread paste");
        assert_eq!(head.headers()["cache-control"], "private, no-store");
    }
    let read = app.get_path(&path).await;
    assert_eq!(read.status(), 200, "the HEADs burnt the paste");
    let body: Value = read.json().await.unwrap();
    assert_eq!(body["data"], "read me once");
    // Burnt now: both methods say so.
    assert_eq!(app.get_path(&path).await.status(), 404);
    let head = app
        .client
        .request(Method::HEAD, app.url(&path))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 404, "HEAD of a burnt paste");
}

/// RFC 9112 §3.2: two `Host` headers are a 400, not "the first one wins"
/// (which would pick a tenant by it).
#[tokio::test]
async fn two_host_headers_are_a_bad_request() {
    let app = TestApp::spawn(&[]).await;
    let created = app.create_ok("hosted").await;
    let id = created["id"].as_str().unwrap();
    let request = format!(
        "GET /api/paste/{id} HTTP/1.1\r\nHost: localhost\r\nHost: other.example\r\nConnection: close\r\n\r\n"
    );
    let response = raw::send(app.addr, request.as_bytes()).await;
    assert_eq!(response.status, 400, "{response:?}");
    let body: Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(body["code"], "bad-request", "{body}");
    assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
    // One Host is served as ever.
    let request =
        format!("GET /api/paste/{id} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(raw::send(app.addr, request.as_bytes()).await.status, 200);
}

/// RFC 9112 §6.1: a transfer coding the server does not implement is a 501,
/// not a body read as plain chunked; nothing is stored.
#[tokio::test]
async fn transfer_codings_other_than_chunked_are_refused() {
    let app = TestApp::spawn(&[]).await;
    let body = r#"{"data":"abc"}"#;
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    for coding in ["gzip, chunked", "chunked, chunked", "deflate,chunked"] {
        let request = format!(
            "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: {coding}\r\nConnection: close\r\n\r\n{chunked}"
        );
        let response = raw::send(app.addr, request.as_bytes()).await;
        // hyper itself refuses some of these with a bare 400; any 4xx/501
        // with no paste stored is right, and ours is the 501.
        assert!(
            response.status == 501 || response.status == 400,
            "{coding}: {response:?}"
        );
        if response.status == 501 {
            let json: Value = serde_json::from_str(&response.body).unwrap();
            assert_eq!(json["code"], "unsupported-transfer-coding", "{coding}");
        }
    }
    let request = format!(
        "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n{chunked}"
    );
    assert_eq!(
        raw::send(app.addr, request.as_bytes()).await.status,
        501,
        "gzip, chunked"
    );
    let request = format!(
        "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{chunked}"
    );
    assert_eq!(raw::send(app.addr, request.as_bytes()).await.status, 201);
}

/// RFC 9112 §3.2.2: a request in absolute form is for the target's host; its
/// `Host` header is ignored (it picked the tenant before).
#[tokio::test]
async fn an_absolute_form_target_picks_the_tenant_not_the_host_header() {
    let app = ts::spawn(ts::Db::Sqlite, &[], |_| {}).await;
    let t = ts::tenant(&app, "absform", json!({"allow_anonymous": true})).await;
    let id = ts::create_v1_ok(&app, &t.key, "the tenant's").await;
    let get = |target: String, host: &str| {
        format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
    };
    let path = format!("/api/v1/pastes/{id}");
    // Origin form: the Host header decides.
    let r = raw::send(app.addr, get(path.clone(), &t.host).as_bytes()).await;
    assert_eq!(r.status, 200, "origin form at the tenant's host: {r:?}");
    // Absolute form: the target's host decides, whatever Host says.
    let target = format!("http://{}{path}", t.host);
    let r = raw::send(app.addr, get(target, "localhost").as_bytes()).await;
    assert_eq!(r.status, 200, "absolute form naming the tenant: {r:?}");
    let target = format!("http://localhost{path}");
    let r = raw::send(app.addr, get(target, &t.host).as_bytes()).await;
    assert_eq!(
        r.status, 404,
        "absolute form naming the default tenant: {r:?}"
    );
}

/// Escaped characters count as what they decode to, as upstream counts
/// `data`: `\u00e9` is one unit, not six (the raw body was counted before).
#[tokio::test]
async fn the_size_limit_counts_decoded_data_not_escaped_bytes() {
    let max = 100_000;
    let app = TestApp::spawn(&[("PASTE_MAX_SIZE", "100000")]).await;
    let escaped = |n: usize, unit: &str| format!(r#"{{"data":"{}"}}"#, unit.repeat(n));
    for (unit, per) in [(r"\u00e9", 1), (r"\ud83d\ude80", 2), (r"\n", 1)] {
        for path in ["/api/paste", "/api/v1/pastes"] {
            let send = |body: String| {
                app.client
                    .post(app.url(path))
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
            };
            // Exactly the limit once decoded (six times it in raw bytes): stored.
            let at_limit = send(escaped(max / per, unit)).await.unwrap();
            assert_eq!(at_limit.status(), 201, "{unit} on {path}");
            let id = at_limit.json::<Value>().await.unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned();
            let read: Value = app
                .get_path(&format!("{path}/{id}"))
                .await
                .json()
                .await
                .unwrap();
            assert_eq!(
                read["data"].as_str().unwrap().encode_utf16().count(),
                max,
                "{unit} on {path}"
            );
            // One unit more: 413.
            let over = send(escaped(max / per + 1, unit)).await.unwrap();
            assert_eq!(over.status(), 413, "{unit} on {path}");
        }
    }
}

/// What a raw request on its own connection got: the status (0 if the
/// server closed without answering) and when.
async fn trickle_body(addr: std::net::SocketAddr, for_at_most: Duration) -> (u16, Duration) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    let head = "POST /api/paste HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{";
    let _ = stream.write_all(head.as_bytes()).await;
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    while started.elapsed() < for_at_most {
        tokio::select! {
            read = stream.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            },
            _ = tick.tick() => {
                // One byte a second, far below any sane rate.
                let _ = stream.write_all(b" ").await;
            }
        }
    }
    let status = String::from_utf8_lossy(&answer)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, started.elapsed())
}

/// The slow-body attack, scaled down: one client opens ten times its cap of
/// connections, each sending a body a byte a second. Its bodies beyond the
/// cap are refused at once (429), the rest dropped after the grace period
/// for falling below the minimum rate (408); meanwhile another client's
/// creates and reads and the probes are all served, though the attacker
/// has more bodies open than the server has places in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_trickle_do_not_take_the_server_down() {
    let app = TestApp::spawn_configured(&[], |s| {
        // More bodies per client than places in flight: a body under way
        // must not hold a place.
        s.http.max_in_flight = 4;
        s.http.max_bodies_per_client = 6;
        s.http.body_rate_grace_secs = 2;
        s.http.body_min_rate_bytes = 1024;
    })
    .await;
    let attack: Vec<_> = (0..40)
        .map(|_| tokio::spawn(trickle_body(app.addr, Duration::from_secs(15))))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let normal = client_from("127.0.0.2");
    let until = Instant::now() + Duration::from_secs(4);
    let mut served = 0;
    while Instant::now() < until {
        for path in ["/healthz", "/readyz"] {
            let probe = normal.get(app.url(path)).send().await.unwrap();
            assert_eq!(probe.status(), 200, "{path} during the attack");
        }
        let created = normal
            .post(app.url("/api/paste"))
            .body(r#"{"data":"still served"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201, "a create during the attack");
        let id = created.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let read = normal
            .get(app.url(&format!("/api/paste/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(read.status(), 200, "a read during the attack");
        served += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served > 5, "{served}");

    let mut outcomes = Vec::new();
    for task in attack {
        outcomes.push(task.await.unwrap());
    }
    let refused = outcomes.iter().filter(|(s, _)| *s == 429).count();
    let too_slow: Vec<_> = outcomes.iter().filter(|(s, _)| *s == 408).collect();
    assert_eq!(refused + too_slow.len(), 40, "{outcomes:?}");
    assert!(
        refused >= 40 - 6,
        "bodies over the cap refused: {outcomes:?}"
    );
    assert!(!too_slow.is_empty(), "{outcomes:?}");
    for (_, after) in &too_slow {
        assert!(
            *after >= Duration::from_secs(2) && *after < Duration::from_secs(12),
            "408 after the grace period, long before the 30 s timeout: {outcomes:?}"
        );
    }
}

/// With every place in flight taken (here by admin requests whose bodies
/// trickle in, which do hold one), requests are shed with 503 but the
/// probes still answer: an orchestrator must not restart a busy instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_are_answered_when_every_place_is_taken() {
    let app = TestApp::spawn_configured(&[], |s| {
        s.http.max_in_flight = 2;
        s.admin.token = ts::ADMIN_TOKEN.into();
    })
    .await;
    let mut holders = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(app.addr).await.unwrap();
        let head = format!(
            "POST /admin/v1/tenants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{",
            ts::ADMIN_TOKEN
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        holders.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let shed = app.get_path("/api/paste/AAAAAAAAAAAAAAAA").await;
    assert_eq!(shed.status(), 503, "every place is taken");
    assert!(shed.headers().contains_key("retry-after"));
    for path in ["/healthz", "/readyz"] {
        assert_eq!(app.get_path(path).await.status(), 200, "{path}");
    }
    drop(holders);
}

/// A connection with a small receive buffer that sends `request` and then
/// reads only the status line of the answer.
pub(crate) async fn request_and_stop_reading(
    addr: std::net::SocketAddr,
    request: &str,
) -> (TcpStream, u16) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut status_line = [0u8; 12];
    stream.read_exact(&mut status_line).await.unwrap();
    let status = String::from_utf8_lossy(&status_line[9..12])
        .parse()
        .unwrap();
    (stream, status)
}

/// `len` characters of base64url text (what an encrypted paste stores;
/// three quarters of it is stored).
pub(crate) fn base64url_text(len: usize) -> String {
    (0..len)
        .map(|i: usize| {
            char::from(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                    [(i * 7 + i / 64) % 64],
            )
        })
        .collect()
}

/// The most a TCP socket's send buffer grows to here, in bytes (4 MiB when
/// the kernel does not say).
pub(crate) fn send_buffer_max() -> usize {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .ok()
        .and_then(|limits| limits.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or(4 << 20)
}

/// Reads `stream` to its end (at most `within`): the bytes read, or `None`
/// if it was still open then.
pub(crate) async fn read_to_close(stream: &mut TcpStream, within: Duration) -> Option<usize> {
    let mut buf = vec![0u8; 64 * 1024];
    let read_to_end = async {
        let mut total = 0;
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return total,
                Ok(n) => total += n,
            }
        }
    };
    tokio::time::timeout(within, read_to_end).await.ok()
}

/// The slow-reader attack, scaled down: clients that ask for a large paste
/// and never read the answer. Answers being written hold at most the
/// response budget, and one client at most a quarter of it: its reads past
/// that are refused (429, or 503 once the budget is spent) instead of each
/// holding a copy of the paste, another client is still served, and the
/// server closes the stuck connections after the write timeout, after which
/// the paste is served again. (How much of an answer the kernel's socket buffers take varies;
/// a shed read shows that answers were stuck in the server long enough.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_that_never_read_hold_a_bounded_memory_for_a_bounded_time() {
    // The paste must be larger than what the kernel takes off the server's
    // hands for a client that reads nothing, or no answer is ever stuck:
    // twice the most a TCP send buffer grows to on this machine
    // (`net.ipv4.tcp_wmem`, 4 MiB on most), and at least 8 MiB of text.
    // The client's receive buffer is pinned small (`request_and_stop_reading`).
    let scale = send_buffer_max().div_ceil(4 << 20).max(1);
    let app = TestApp::spawn_configured(&[], |s| {
        // Two answers fit the budget: each holds about its 6 MiB per scale.
        s.http.response_memory_mib = 16 * scale;
        s.paste.max_size = 16 * 1024 * 1024 * scale;
        s.server.write_timeout_secs = 2;
        // Longer than the wait below: closing comes from the write timeout.
        s.server.header_read_timeout_secs = 60;
    })
    .await;
    // base64url text; three quarters of it is stored.
    let text = base64url_text(8 * 1024 * 1024 * scale);
    let id = app.create_ok(&text).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // `Connection: close`: an answer written whole closes its connection.
    let request =
        format!("GET /api/paste/{id} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");

    let readers: Vec<_> = (0..8)
        .map(|_| {
            let (addr, request) = (app.addr, request.clone());
            tokio::spawn(async move { request_and_stop_reading(addr, &request).await })
        })
        .collect();
    let mut answered = Vec::new();
    let mut shed = 0;
    for reader in readers {
        let (stream, status) = reader.await.unwrap();
        match status {
            200 => answered.push(stream),
            // 429: the client holds its share of the budget; 503: it is spent.
            429 | 503 => shed += 1,
            other => panic!("a reader got {other}"),
        }
    }
    assert!(shed >= 1, "no read was shed: every answer was held at once");
    assert_eq!(shed + answered.len(), 8);
    assert!(
        !answered.is_empty(),
        "every read was shed: a client's first answer must go through"
    );
    // Another client is served meanwhile: one address holds at most a
    // quarter of the budget.
    let other = client_from("127.0.0.2");
    let read = other
        .get(app.url(&format!("/api/paste/{id}")))
        .send()
        .await
        .unwrap();
    let status = read.status();
    assert_eq!(
        status,
        200,
        "another client during the attack: {:?}",
        read.text().await
    );
    assert_eq!(read.bytes().await.unwrap().len(), text.len() + 11);
    // Past the write timeout, without reading: the server has given up on
    // the answers it could not write, so what is left to read of them is
    // what the sockets' buffers held, not the whole paste.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut reads = Vec::new();
    for stream in &mut answered {
        let read = read_to_close(stream, Duration::from_secs(10))
            .await
            .expect("a connection whose client reads nothing stays open");
        reads.push(read);
    }
    assert!(
        reads.iter().any(|&read| read < text.len()),
        "every stuck answer was still written whole: read {reads:?} of {} bytes each",
        text.len()
    );
    let read = app.get(&id).await;
    assert_eq!(read.status(), 200);
    let body: Value = read.json().await.unwrap();
    assert_eq!(body["data"].as_str().unwrap().len(), text.len());
}

/// Deleting a tenant makes its pastes unreachable at once and removes them
/// from the store (every backend: the suite runs on each); its namespace
/// cannot be taken by a new tenant while they may still be there, so a new
/// tenant never reads the old one's pastes.
#[tokio::test]
async fn a_deleted_tenants_pastes_are_gone_and_its_namespace_is_not_inherited() {
    for db in ts::databases().await {
        let app = ts::spawn(db, &[], |_| {}).await;
        // A namespace of this run only: the Redis and S3 stores are shared.
        let label = format!(
            "reuse-{}",
            paste_store::PasteId::generate(8)
                .unwrap()
                .as_str()
                .to_ascii_lowercase()
        );
        let old = ts::tenant(&app, &label, json!({"allow_anonymous": true})).await;
        let keyed = ts::create_v1_ok(&app, &old.key, "the old tenant's").await;
        let anonymous = app
            .client
            .post(app.url("/api/paste"))
            .header("host", &old.host)
            .body(r#"{"data":"the old tenant's too"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(anonymous.status(), 201, "{db:?}");
        let anonymous = anonymous.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();

        let deleted = ts::admin(
            &app,
            Method::DELETE,
            &format!("/admin/v1/tenants/{}", old.id),
            None,
        )
        .await;
        assert_eq!(deleted.status(), 204, "{db:?}");

        // Gone from the store itself, on whichever backend this is.
        let store = paste_store::open(&app.settings.store).await.unwrap();
        let namespace = paste_store::Namespace::parse(&label).unwrap();
        for id in [&keyed, &anonymous] {
            let key = paste_store::PasteKey::new(
                namespace.clone(),
                paste_store::PasteId::parse(id).unwrap(),
            );
            assert!(
                matches!(
                    store.get(&key).await,
                    Err(paste_store::StoreError::NotFound)
                ),
                "{db:?}: a deleted tenant's paste is still stored"
            );
        }
        // Unreachable: the old key is refused, the old host is the default tenant's.
        let read = ts::keyed(
            &app,
            Method::GET,
            &format!("/api/v1/pastes/{keyed}"),
            &old.key,
        )
        .send()
        .await
        .unwrap();
        assert_eq!(read.status(), 401, "{db:?}");
        let read = app
            .client
            .get(app.url(&format!("/api/paste/{anonymous}")))
            .header("host", &old.host)
            .send()
            .await
            .unwrap();
        assert_eq!(read.status(), 404, "{db:?}");

        // The namespace is not handed to a new tenant yet.
        let (status, body) = ts::status_json(
            ts::admin(
                &app,
                Method::POST,
                "/admin/v1/tenants",
                Some(json!({"name": "newcomer", "namespace": label})),
            )
            .await,
        )
        .await;
        assert_eq!(status, 409, "{db:?}: {body}");
        assert_eq!(body["code"], "protected", "{db:?}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains("deleted tenant"),
            "{db:?}: {body}"
        );
    }
}

/// A delete token deletes its paste whatever tenant the request resolves
/// to: a keyed tenant without hosts has no host to reach it by, and its
/// creator holds only the token.
#[tokio::test]
async fn a_delete_token_deletes_a_keyed_tenants_paste_without_its_key() {
    for db in ts::databases().await {
        let app = ts::spawn(db, &[], |_| {}).await;
        let t = ts::tenant(&app, "tokens", json!({"hosts": [], "cors_origins": []})).await;
        for route in ["/api/paste", "/api/v1/pastes"] {
            let (status, created) = ts::status_json(
                ts::create_v1(&app, &t.key, json!({"data": "keyed, deleted by token"})).await,
            )
            .await;
            assert_eq!(status, 201, "{db:?}: {created}");
            let id = created["id"].as_str().unwrap();
            let token = created["deleteToken"].as_str().unwrap();
            let path = format!("{route}/{id}");
            let delete =
                |token: String| app.client.delete(app.url(&path)).bearer_auth(token).send();
            let read =
                || ts::keyed(&app, Method::GET, &format!("/api/v1/pastes/{id}"), &t.key).send();
            // A well-formed token of another paste deletes nothing.
            let wrong = delete("A".repeat(43)).await.unwrap();
            assert_eq!(wrong.status(), 404, "{db:?} {route}");
            let after = read().await.unwrap().status();
            assert_eq!(after, 200, "{db:?} {route}: survives a wrong token");
            // Its own token, with no key and no host of the tenant: deleted.
            let deleted = delete(token.to_owned()).await.unwrap();
            assert_eq!(deleted.status(), 204, "{db:?} {route}");
            let after = read().await.unwrap().status();
            assert_eq!(after, 404, "{db:?} {route}: still readable");
        }
        // The index entry went with it: nothing left to list.
        let (status, list) = ts::status_json(
            ts::keyed(&app, Method::GET, "/api/v1/pastes", &t.key)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200, "{db:?}");
        assert_eq!(list["pastes"], json!([]), "{db:?}: {list}");
    }
}

//! Regressions of the outside attack on live reviews (issue 42): each test
//! fails on the build that was attacked.

use std::time::Duration;

use serde_json::json;
use testkit::TestApp;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::attack::{base64url_text, request_and_stop_reading, send_buffer_max};
use crate::limits::client_from;
use crate::reviews::{Review, call};

/// Sends a request for `review`'s events as `token` on a connection of its
/// own: SSE, or when `json` the long poll (which answers only when an
/// event arrives or its 25 s are over).
async fn request_stream(app: &TestApp, review: &Review, token: &str, json: bool) -> TcpStream {
    let (path, accept) = if json {
        // Past every event: nothing is waiting, so it waits.
        (
            review.path("/events?after=1000000&wait=25"),
            "application/json",
        )
    } else {
        (review.path("/events"), "text/event-stream")
    };
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nAccept: {accept}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// Opens an SSE stream as [`request_stream`] does and reads the answer's
/// head: the connection (still open when the answer is 200) and the status.
async fn open_sse(app: &TestApp, review: &Review, token: &str) -> (TcpStream, u16) {
    let mut stream = request_stream(app, review, token, false).await;
    let mut status_line = [0u8; 12];
    tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut status_line))
        .await
        .unwrap_or_else(|_| panic!("the stream's head in time"))
        .unwrap();
    let status = String::from_utf8_lossy(&status_line[9..12])
        .parse()
        .unwrap();
    (stream, status)
}

/// The status and body of an event-stream request that is refused.
async fn refused_stream(
    client: &reqwest::Client,
    app: &TestApp,
    review: &Review,
    token: &str,
) -> (u16, serde_json::Value) {
    let response = client
        .get(app.url(&review.path("/events")))
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    if status != 200 {
        assert!(
            response.headers().contains_key("retry-after"),
            "a refusal carries Retry-After"
        );
    }
    let body = if status == 200 {
        serde_json::Value::Null
    } else {
        response.json().await.unwrap()
    };
    (status, body)
}

/// One client cannot hold more than its share of stream places, one link
/// not more than its share of its review's: the owner of a review whose
/// reviewer link opened all it may, and every other client, still get in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_or_one_link_holds_at_most_its_share_of_streams() {
    let app = TestApp::spawn_configured(&[], |s| {
        s.reviews.streams_per_client = 6;
        s.reviews.streams_per_link = 2;
    })
    .await;
    let review = Review::create(&app, "v1").await;
    let (_, reviewer) = review.link(&app).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let (stream, status) = open_sse(&app, &review, &reviewer).await;
        assert_eq!(status, 200);
        held.push(stream);
    }
    let (status, body) = refused_stream(&app.client, &app, &review, &reviewer).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("too-many-streams"))
    );
    assert!(
        body["error"].as_str().unwrap().contains("this link has 2"),
        "{body}"
    );
    // The owner is not locked out by the reviewer's link.
    let (stream, status) = open_sse(&app, &review, &review.owner).await;
    assert_eq!(status, 200, "the owner still gets in");
    held.push(stream);
    // The same client on other reviews, up to its share of the process.
    let mut refused = None;
    for _ in 0..4 {
        let other = Review::create(&app, "other").await;
        for _ in 0..2 {
            let (stream, status) = open_sse(&app, &other, &other.owner).await;
            if status == 200 {
                held.push(stream);
            } else {
                refused = Some((other.id.clone(), other.owner.clone()));
                break;
            }
        }
        if refused.is_some() {
            break;
        }
    }
    assert_eq!(held.len(), 6, "the client's share, and no more");
    let (id, owner) =
        refused.unwrap_or_else(|| panic!("a stream past the client's share is refused"));
    let other = Review { id, owner };
    let (status, body) = refused_stream(&app.client, &app, &other, &other.owner).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("too-many-streams"))
    );
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("this client has 6"),
        "{body}"
    );
    // Another client is not affected.
    let elsewhere = client_from("127.0.0.2");
    let response = elsewhere
        .get(app.url(&other.path("/events?wait=0")))
        .header("authorization", format!("Bearer {}", other.owner))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "another client's stream");
}

/// A client that goes away gives its stream place back at once, not at
/// its stream's next write (keep-alives come every 15 s): the same link
/// gets its only place back within a second, for SSE and the long poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_gives_its_stream_place_back_at_once() {
    let app = TestApp::spawn_configured(&[], |s| {
        s.reviews.streams_per_link = 1;
    })
    .await;
    let review = Review::create(&app, "v1").await;
    for json in [false, true] {
        // A stream that holds the link's one place (a long poll's head comes
        // only with its answer: the place is seen taken by a refusal).
        let mut holder = None;
        for _ in 0..10 {
            let stream = request_stream(&app, &review, &review.owner, json).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let (status, _) = refused_stream(&app.client, &app, &review, &review.owner).await;
            if status == 429 {
                holder = Some(stream);
                break;
            }
            // The probe came first and took the place: try again.
            drop(stream);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let stream = holder.unwrap_or_else(|| panic!("a stream holds the link's place"));
        drop(stream);
        let started = Instant::now();
        loop {
            let (again, status) = open_sse(&app, &review, &review.owner).await;
            if status == 200 {
                drop(again);
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "the place of a client that left is still held (json: {json})"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // That stream's client left too: its place comes back as quickly.
        let started = Instant::now();
        loop {
            let (status, _) = refused_stream(&app.client, &app, &review, &review.owner).await;
            if status == 200 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(2), "json: {json}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// With every connection place held by event streams, the probes still
/// answer, and other requests get 503 + `Retry-After` instead of hanging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_answer_when_streams_hold_every_connection() {
    let app = TestApp::spawn_configured(&[], |s| {
        s.server.max_connections = 6;
    })
    .await;
    let review = Review::create(&app, "v1").await;
    let mut tokens = vec![review.owner.clone()];
    for _ in 0..7 {
        tokens.push(review.link(&app).await.1);
    }
    // Streams until the server has no place left (the test's own client
    // connections, pooled or still closing, may hold one or two).
    let mut held = Vec::new();
    let mut full = false;
    for token in &tokens {
        let (stream, status) = open_sse(&app, &review, token).await;
        match status {
            200 => held.push(stream),
            503 => {
                full = true;
                break;
            }
            other => panic!("a stream got {other}"),
        }
    }
    assert!(
        full && held.len() >= 3,
        "{} streams, then the limit: {full}",
        held.len()
    );
    let fresh = || {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(3))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap()
    };
    for path in ["/healthz", "/readyz"] {
        let answer = fresh().get(app.url(path)).send().await;
        assert_eq!(
            answer.map(|r| r.status().as_u16()).ok(),
            Some(200),
            "{path} at the connection limit"
        );
    }
    let shed = fresh()
        .get(app.url("/api/paste/AAAAAAAAAAAAAAAA"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("an answer, not a hang: {e}"));
    assert_eq!(shed.status(), 503);
    assert!(shed.headers().contains_key("retry-after"));
    let body: serde_json::Value = shed.json().await.unwrap();
    assert_eq!(body["code"], "overloaded");
    drop(held);
    // Places free again: ordinary requests are served.
    let started = Instant::now();
    loop {
        let status = fresh()
            .get(app.url("/api/paste/AAAAAAAAAAAAAAAA"))
            .send()
            .await
            .map(|r| r.status().as_u16());
        if status.as_ref().is_ok_and(|s| *s == 404) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "served again once the streams left: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The slow-reader attack on reviews: clients that ask for a large version
/// or a review with large comment sets and never read the answer hold at
/// most a client's share of the response budget (further reads: 429, or
/// 503 once it is spent), and another client is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_readers_that_never_read_hold_a_bounded_memory() {
    // As in the paste attack's test: an answer larger than what the
    // kernel's buffers take off the server's hands.
    let scale = send_buffer_max().div_ceil(4 << 20).max(1);
    let app = TestApp::spawn_configured(&[], |s| {
        s.http.response_memory_mib = 16 * scale;
        s.paste.max_size = 16 * 1024 * 1024 * scale;
        s.server.write_timeout_secs = 5;
        s.server.header_read_timeout_secs = 60;
    })
    .await;
    let text = base64url_text(8 * 1024 * 1024 * scale);
    let review = Review::create(&app, &text).await;
    let put = call(
        &app,
        "PUT",
        &review.path("/comments"),
        Some(&review.owner),
        Some(json!({"name": "owner", "version": 1, "data": text})),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.text);
    for path in [review.path("/versions/1"), review.path("")] {
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            review.owner
        );
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
                429 | 503 => shed += 1,
                other => panic!("{path}: a reader got {other}"),
            }
        }
        assert!(
            shed >= 1,
            "{path}: no read was shed: every answer was held at once"
        );
        assert!(
            !answered.is_empty(),
            "{path}: every read was shed: a client's first answer must go through"
        );
        let other = client_from("127.0.0.2");
        let read = other
            .get(app.url(&path))
            .header("authorization", format!("Bearer {}", review.owner))
            .send()
            .await
            .unwrap();
        assert_eq!(
            read.status(),
            200,
            "{path}: another client during the attack"
        );
        let body: serde_json::Value = read.json().await.unwrap();
        let data = if path.ends_with("/1") {
            &body["data"]
        } else {
            &body["comments"][0]["data"]
        };
        assert_eq!(data.as_str().map(str::len), Some(text.len()), "{path}");
        drop(answered);
        // The budget is given back once the stuck answers are dropped.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Names are kept composed (NFC) and trimmed, names that look alike are
/// one name, and invisible formatting characters are refused with a 4xx
/// that changes nothing.
#[tokio::test]
async fn lookalike_and_invisible_names_are_one_name_or_refused() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "v1").await;
    let mut links = Vec::new();
    for _ in 0..6 {
        links.push(review.link(&app).await.1);
    }
    let stored = review.comment(&app, &links[0], " Alice\t", "one").await;
    assert_eq!(stored.status, 200, "{}", stored.text);
    let read = call(&app, "GET", &review.path(""), Some(&links[0]), None).await;
    assert_eq!(read.body["you"]["name"], "Alice", "trimmed");
    // The same link writes again under its name as typed either way.
    for again in ["Alice", "Alice "] {
        let answer = review.comment(&app, &links[0], again, "two").await;
        assert_eq!(answer.status, 200, "{again:?}: {}", answer.text);
    }
    // Other links cannot take it, however it is disguised.
    for lookalike in ["alice", "\u{410}lice", "Al\u{456}ce", "ALICE "] {
        let answer = review.comment(&app, &links[1], lookalike, "x").await;
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (409, Some("name-taken")),
            "{lookalike:?}: {}",
            answer.text
        );
    }
    // Composed and decomposed forms are one name.
    let decomposed = review.comment(&app, &links[2], "A\u{30a}sa", "y").await;
    assert_eq!(decomposed.status, 200, "{}", decomposed.text);
    let read = call(&app, "GET", &review.path(""), Some(&links[2]), None).await;
    assert_eq!(read.body["you"]["name"], "\u{c5}sa", "kept composed");
    let composed = review.comment(&app, &links[3], "\u{c5}sa", "z").await;
    assert_eq!(composed.body["code"], "name-taken", "{}", composed.text);
    // Invisible formatting characters: refused, nothing stored.
    for hidden in [
        "Al\u{200b}ice",
        "\u{202e}ecilA",
        "Bob\u{200f}",
        "\u{feff}Bob",
        "Bo\u{2066}b",
        "\u{200b}",
    ] {
        let answer = review.comment(&app, &links[4], hidden, "w").await;
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (422, Some("invalid-field")),
            "{hidden:?}: {}",
            answer.text
        );
    }
    let read = call(&app, "GET", &review.path(""), Some(&review.owner), None).await;
    let names: Vec<&str> = read.body["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.contains(&"Alice") && names.contains(&"\u{c5}sa"),
        "{names:?}"
    );
    let links_seen: Vec<_> = read.body["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert_eq!(
        links_seen.len(),
        2,
        "no other link bound a name: {links_seen:?}"
    );
}

/// An SSE stream resumed more than a page (1 000 events) back replays
/// every event to the newest, then follows live: a decision after the
/// replay arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumed_far_back_replays_every_page_then_follows() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "v1").await;
    let (_, token) = review.link(&app).await;
    for i in 0..1_100 {
        let put = review
            .comment(&app, &token, "kim", &format!("set {i}"))
            .await;
        assert_eq!(put.status, 200, "{}", put.text);
    }
    // create, link, 1 100 sets.
    let newest = 1_102u64;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nLast-Event-ID: 1\r\n\r\n",
        review.path("/events"),
        review.owner
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = String::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut decided = false;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.contains("event: decision") {
        if !decided && seen.contains(&format!("id: {newest}\n")) {
            let decision = call(
                &app,
                "POST",
                &review.path("/decision"),
                Some(&review.owner),
                Some(json!({"decision": "approved", "version": 1})),
            )
            .await;
            assert_eq!(decision.status, 200, "{}", decision.text);
            decided = true;
        }
        let read = tokio::time::timeout_at(deadline, stream.read(&mut buf))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "stalled: the last id seen is {:?} (decided: {decided})",
                    seen.rsplit("id: ").next().and_then(|r| r.lines().next())
                )
            })
            .unwrap();
        assert!(read > 0, "the stream ended");
        seen.push_str(&String::from_utf8_lossy(&buf[..read]));
    }
    let ids: Vec<u64> = seen
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|id| id.parse().unwrap())
        .collect();
    let expected: Vec<u64> = (2..=newest + 1).collect();
    assert_eq!(ids, expected, "every event after 1, once, in order");
}

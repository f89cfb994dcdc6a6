//! The event stream: SSE frames and the JSON long poll, replay after a
//! reconnect with no gap and no repeat, and the ends of a stream
//! (revocation, deletion, caps, shutdown).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::TestApp;

use super::{Review, call, digest, kinds};

/// One parsed SSE frame (`None` fields for a comment line).
#[derive(Debug, Clone, PartialEq)]
struct Frame {
    id: Option<u64>,
    event: Option<String>,
    data: Option<Value>,
    comment: Option<String>,
}

/// An open SSE response and what has been read of it.
struct Sse {
    response: reqwest::Response,
    buffer: String,
}

impl Sse {
    async fn open(app: &TestApp, review: &Review, token: &str, last_id: Option<u64>) -> Sse {
        let mut request = app
            .client
            .get(app.url(&review.path("/events")))
            .header("authorization", format!("Bearer {token}"));
        if let Some(id) = last_id {
            request = request.header("last-event-id", id.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Sse {
            response,
            buffer: String::new(),
        }
    }

    /// The next frame (comments included), `None` when the stream ended,
    /// panicking after `within`.
    async fn next(&mut self, within: Duration) -> Option<Frame> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut frame = Frame {
                    id: None,
                    event: None,
                    data: None,
                    comment: None,
                };
                for line in block.lines() {
                    if let Some(c) = line.strip_prefix(':') {
                        frame.comment = Some(c.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("id: ") {
                        frame.id = Some(v.parse().unwrap());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        frame.event = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        frame.data = Some(serde_json::from_str(v).unwrap());
                    } else if line.starts_with("retry: ") {
                        frame.comment = Some(line.to_owned());
                    }
                }
                return Some(frame);
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("no frame in time"))
                .unwrap();
            match chunk {
                Some(bytes) => self.buffer.push_str(std::str::from_utf8(&bytes).unwrap()),
                None => return None,
            }
        }
    }

    /// The next event frame, skipping comments.
    async fn event(&mut self, within: Duration) -> Option<Frame> {
        loop {
            let frame = self.next(within).await?;
            if frame.event.is_some() {
                return Some(frame);
            }
        }
    }
}

const SOON: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_long_poll_answers_when_an_event_arrives() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "v1").await;
    let (_, eve) = review.link(&app).await;
    // Caught up: the poll waits, and the comment ends the wait.
    let seq = review.poll(&app, &eve, 0, 0).await.body["seq"]
        .as_u64()
        .unwrap();
    assert_eq!(seq, 2);
    let waiting = review.poll(&app, &eve, seq, 20);
    let comment = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        review.comment(&app, &review.owner, "owner", "set").await
    };
    let started = Instant::now();
    let (page, put) = tokio::join!(waiting, comment);
    assert_eq!(put.status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "answered on the event"
    );
    assert_eq!(kinds(&page.body), ["comments"]);
    assert_eq!(page.body["events"][0]["id"], 3);
    assert_eq!(
        page.body["events"][0]["data"],
        json!({"writer": "owner", "name": "owner", "version": 1, "withdrawn": false})
    );
    assert_eq!(page.body["seq"], 3);
    // Nothing new: an empty page when the wait runs out.
    let empty = review.poll(&app, &eve, 3, 1).await;
    assert_eq!(empty.body, json!({"events": [], "seq": 3}));
}

#[tokio::test]
async fn sse_delivers_each_event_once_and_replays_after_a_reconnect() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "v1").await;
    let (_, fay) = review.link(&app).await;
    let mut stream = Sse::open(&app, &review, &review.owner, None).await;
    assert_eq!(
        stream.next(SOON).await.unwrap().comment.as_deref(),
        Some("retry: 2000")
    );
    // The backlog first.
    let first = stream.event(SOON).await.unwrap();
    assert_eq!(
        (first.id, first.event.as_deref()),
        (Some(1), Some("version"))
    );
    let second = stream.event(SOON).await.unwrap();
    assert_eq!(
        (second.id, second.event.as_deref()),
        (Some(2), Some("links"))
    );
    // Live events as they are committed.
    assert_eq!(review.comment(&app, &fay, "fay", "a").await.status, 200);
    let live = stream.event(SOON).await.unwrap();
    assert_eq!(
        (live.id, live.event.as_deref()),
        (Some(3), Some("comments"))
    );
    assert_eq!(live.data.unwrap()["name"], "fay");
    drop(stream);

    // Three changes while disconnected, then a reconnect from id 3.
    assert_eq!(review.comment(&app, &fay, "fay", "b").await.status, 200);
    let pushed = call(
        &app,
        "POST",
        &review.path("/versions"),
        Some(&review.owner),
        Some(json!({"data": "v2", "digest": digest(2), "parent": 1})),
    )
    .await;
    assert_eq!(pushed.status, 201);
    assert_eq!(review.comment(&app, &fay, "fay", "c").await.status, 200);
    let mut again = Sse::open(&app, &review, &review.owner, Some(3)).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(again.event(SOON).await.unwrap().id.unwrap());
    }
    assert_eq!(ids, [4, 5, 6], "no gap, no repeat");
    // And on live, after the replay.
    let decided = call(
        &app,
        "POST",
        &review.path("/decision"),
        Some(&review.owner),
        Some(json!({"decision": "approved", "version": 2})),
    )
    .await;
    assert_eq!(decided.status, 200, "{}", decided.text);
    let decision = again.event(SOON).await.unwrap();
    assert_eq!(
        (decision.id, decision.event.as_deref()),
        (Some(7), Some("decision"))
    );
    assert_eq!(
        decision.data.unwrap(),
        json!({"decision": "approved", "round": 1, "version": 2,
               "by": {"role": "owner", "link": "owner", "name": null}})
    );
}

#[tokio::test]
async fn a_revoked_reviewers_stream_is_told_and_closed_within_a_second() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "v1").await;
    let (gil_link, gil) = review.link(&app).await;
    let mut stream = Sse::open(&app, &review, &gil, Some(2)).await;
    assert!(
        stream.next(SOON).await.unwrap().comment.is_some(),
        "retry hint"
    );
    let started = Instant::now();
    let revoked = call(
        &app,
        "DELETE",
        &review.path(&format!("/links/{gil_link}")),
        Some(&review.owner),
        None,
    )
    .await;
    assert_eq!(revoked.status, 204);
    let frame = stream.event(SOON).await.unwrap();
    assert_eq!(frame.event.as_deref(), Some("revoked"));
    assert_eq!(frame.data.unwrap(), json!({"link": gil_link}));
    assert_eq!(stream.next(SOON).await, None, "the stream ends");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // Reconnecting with the revoked token is refused like any wrong token.
    let answer = call(&app, "GET", &review.path("/events"), Some(&gil), None).await;
    assert_eq!(answer.status, 404);
}

#[tokio::test]
async fn deleting_a_review_closes_its_streams() {
    let app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "v1").await;
    let (_, hal) = review.link(&app).await;
    let mut stream = Sse::open(&app, &review, &hal, Some(2)).await;
    let mut poll = Box::pin(review.poll(&app, &hal, 2, 20));
    // Let the poll start waiting before the delete.
    let _ = tokio::time::timeout(Duration::from_millis(300), &mut poll).await;
    let deleted = call(&app, "DELETE", &review.path(""), Some(&review.owner), None).await;
    assert_eq!(deleted.status, 204);
    let frame = stream.event(SOON).await.unwrap();
    assert_eq!(frame.event.as_deref(), Some("closed"));
    assert_eq!(frame.data.unwrap(), json!({"reason": "deleted"}));
    assert_eq!(stream.next(SOON).await, None);
    let page = tokio::time::timeout(SOON, poll).await.unwrap();
    assert_eq!(kinds(&page.body), ["closed"]);
}

#[tokio::test]
async fn streams_past_the_per_review_cap_are_refused_with_the_cap_named() {
    // A client that goes away is noticed at the next write: keep-alives
    // every second here.
    let app = TestApp::spawn_configured(&[], |s| {
        s.reviews.streams_per_review = 2;
        s.reviews.keep_alive_secs = 1;
    })
    .await;
    let review = Review::create(&app, "v1").await;
    let _a = Sse::open(&app, &review, &review.owner, None).await;
    let _b = Sse::open(&app, &review, &review.owner, None).await;
    let third = call(
        &app,
        "GET",
        &review.path("/events"),
        Some(&review.owner),
        None,
    )
    .await;
    assert_eq!(third.status, 429, "{}", third.text);
    assert_eq!(third.body["code"], "too-many-streams");
    assert!(third.body["error"].as_str().unwrap().contains('2'));
    // Another review is not affected.
    let other = Review::create(&app, "v1").await;
    let _c = Sse::open(&app, &other, &other.owner, None).await;
    // A closed stream gives its place back.
    drop(_a);
    let mut reopened = false;
    for _ in 0..50 {
        let response = app
            .client
            .get(app.url(&review.path("/events?wait=0")))
            .header("authorization", format!("Bearer {}", review.owner))
            .header("accept", "application/json")
            .send()
            .await
            .unwrap();
        if response.status() == 200 {
            reopened = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reopened, "the place of a closed stream is given back");
}

#[tokio::test]
async fn shutting_down_ends_streams_without_closing_the_review() {
    let mut app = TestApp::spawn(&[]).await;
    let review = Review::create(&app, "v1").await;
    let mut stream = Sse::open(&app, &review, &review.owner, Some(1)).await;
    assert!(stream.next(SOON).await.unwrap().comment.is_some());
    let started = Instant::now();
    let task = app.begin_shutdown().unwrap();
    let mut saw_closed = false;
    while let Some(frame) = stream.next(SOON).await {
        saw_closed |= frame.event.as_deref() == Some("closed");
    }
    assert!(!saw_closed, "the review is not closed by a shutdown");
    task.await.unwrap().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "streams do not hold the drain up"
    );
}

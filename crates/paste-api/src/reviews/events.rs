//! `GET /api/v1/reviews/{id}/events`: a review's events, as a server-sent
//! event stream, or with `Accept: application/json` as a long poll.
//!
//! - SSE: a `retry:` hint, then one frame per event (`id:` the sequence
//!   number, `event:` its kind, `data:` small JSON), a `: keep-alive`
//!   comment after each idle `reviews.keep_alive_secs`. Reconnecting with
//!   `Last-Event-ID` (or `?after=`) replays what was missed, with no gap
//!   and no repeat.
//! - The stream ends after a `revoked` frame for the caller's own link, or
//!   a `closed` frame (`{"reason":"deleted"|"expired"}`) when the review is
//!   gone. When the server shuts down it ends with a `: reconnect` comment
//!   and no frame: the review is still there, and a client reconnects
//!   (to another replica where there is one) with its last id.
//! - Long poll: `?after=<seq>&wait=<0-25>` answers at once when events are
//!   waiting, else when one arrives or the wait runs out:
//!   `{"events":[{"id","event","data"}…],"seq"}`.
//!
//! Either way the request takes a stream place (per review and per
//! process) and no place among the requests in flight: streams are bounded
//! by their own caps, the connection limit and the write timeout (a client
//! that stops reading is closed by the server's write timeout).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use api_types::reviews as wire;
use axum::Extension;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body::Frame;
use tenancy::ReviewEvent;
use tokio::sync::mpsc;

use super::caller::ReviewCaller;
use super::service::hub::{EVENTS_SENT, StreamRefusal};
use super::service::stream::{Feed, Next};
use crate::connection::{ClientGone, GoneFuture};
use crate::error::ApiError;
use crate::ratelimit::ClientIp;
use crate::response::json_response;
use crate::state::AppState;

/// The longest long-poll wait, in seconds.
const MAX_WAIT_SECS: u64 = 25;
/// What a client waits before reconnecting a dropped stream, in ms.
const RETRY_MS: u32 = 2000;

/// `GET /api/v1/reviews/{id}/events` — see the module documentation.
#[utoipa::path(
    get,
    path = "/api/v1/reviews/{id}/events",
    tag = "reviews",
    operation_id = "reviewEvents",
    params(
        ("id" = String, Path, pattern = "^[A-Za-z0-9]{6,16}$", description = "The review id"),
        ("after" = Option<u64>, Query, description = "Replay the events after this sequence number (default 0: all); `Last-Event-ID` takes precedence"),
        ("wait" = Option<u64>, Query, minimum = 0, maximum = 25, description = "Long poll only: seconds to wait for an event when none is waiting (default 25)"),
        ("Last-Event-ID" = Option<u64>, Header, description = "SSE reconnection: the last `id` received"),
    ),
    responses(
        (status = 200, description = "`text/event-stream` frames (`id`, `event`, `data`), or with `Accept: application/json` the long-poll page", content(
            (api_types::reviews::ReviewEventPage = "application/json"),
            (crate::openapi::schemas::ReviewSseEvent = "text/event-stream"),
        )),
        (status = 400, response = crate::openapi::responses::BadRequest),
        (status = 422, response = crate::openapi::responses::Unprocessable),
    ),
    security(("reviewToken" = [])),
)]
pub(crate) async fn review_events(
    State(state): State<AppState>,
    ReviewCaller(caller): ReviewCaller,
    RawQuery(query): RawQuery,
    client: Option<Extension<ClientIp>>,
    gone: Option<Extension<ClientGone>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let query = EventsQuery::parse(query.as_deref())?;
    let after = resume_after(&headers, query.after)?;
    let service = &state.inner.reviews;
    let client = client.map(|Extension(ClientIp(ip))| ip);
    let feed = Feed::open(service, caller, after, client)
        .await?
        .map_err(|refusal| ApiError::TooManyStreams {
            message: refused_because(refusal),
        })?;
    // Watched from now on: a client that leaves gives its places back at once.
    let gone = gone.map_or_else(ClientGone::never, |Extension(gone)| gone.wait());
    if wants_json(&headers) {
        let wait = Duration::from_secs(query.wait.unwrap_or(MAX_WAIT_SECS));
        return tokio::select! {
            answer = long_poll(feed, wait) => answer,
            // Nobody reads this answer; the log line says the client left.
            () = gone => Ok(client_closed()),
        };
    }
    let keep_alive = Duration::from_secs(service.config().keep_alive_secs);
    Ok(sse(feed, keep_alive, gone))
}

/// Where a stream resumes: after `Last-Event-ID` when the client sends one
/// (a reconnecting `EventSource` does), else after the query's `after`.
fn resume_after(headers: &HeaderMap, after: u64) -> Result<i64, ApiError> {
    let after = match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or(ApiError::InvalidField(
                "Last-Event-ID must be the `id` of an event (a number)".into(),
            ))?,
        None => after,
    };
    Ok(i64::try_from(after).unwrap_or(i64::MAX))
}

/// The `429 too-many-streams` message for `refusal`.
fn refused_because(refusal: StreamRefusal) -> String {
    match refusal {
        StreamRefusal::Review(max) => format!(
            "this review has {max} event streams open on this server, the most it may have: close one, or retry later"
        ),
        StreamRefusal::Link(max) => format!(
            "this link has {max} event streams open on this review, the most one link may have: close one (another tab or watcher), or retry later"
        ),
        StreamRefusal::Client(max) => format!(
            "this client has {max} event streams open on this server, the most one client may have: close one, or retry later"
        ),
        StreamRefusal::Process(max) => {
            format!("this server has {max} event streams open, the most it serves: retry later")
        }
    }
}

/// What a long poll whose client left answers (nobody reads it): nginx's
/// "client closed request" status, so that the log line says so.
fn client_closed() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST);
    response
}

/// The query of the events route.
struct EventsQuery {
    after: u64,
    wait: Option<u64>,
}

impl EventsQuery {
    fn parse(query: Option<&str>) -> Result<Self, ApiError> {
        let bad = || {
            ApiError::InvalidField(format!(
                "query: expected after=<sequence number> and wait=0..{MAX_WAIT_SECS}"
            ))
        };
        let mut parsed = EventsQuery {
            after: 0,
            wait: None,
        };
        for (key, value) in form_pairs(query.unwrap_or("")) {
            match key.as_str() {
                "after" => parsed.after = value.parse().map_err(|_| bad())?,
                "wait" => {
                    let wait: u64 = value.parse().map_err(|_| bad())?;
                    if wait > MAX_WAIT_SECS {
                        return Err(bad());
                    }
                    parsed.wait = Some(wait);
                }
                _ => return Err(bad()),
            }
        }
        Ok(parsed)
    }
}

fn form_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    query.split('&').filter(|p| !p.is_empty()).map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k.to_owned(), v.to_owned())
    })
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        })
}

/// Answers what is waiting, else waits up to `wait` for the next event.
async fn long_poll(mut feed: Feed, wait: Duration) -> Result<Response, ApiError> {
    let mut events = Vec::new();
    let mut first = true;
    let page = usize::try_from(tenancy::MAX_EVENTS_PER_READ).unwrap_or(usize::MAX);
    loop {
        // Only the first event is waited for; the rest must be ready. One
        // answer carries a page at most: the client asks again for more.
        if !first && (!feed.has_backlog() || events.len() >= page) {
            break;
        }
        let idle = if first { wait } else { Duration::ZERO };
        first = false;
        match feed.next(idle).await.map_err(ApiError::from_review)? {
            Next::Event(event) => events.push(frame(&event)),
            Next::Revoked(event) => {
                events.push(frame(&event));
                break;
            }
            Next::Closed(reason) => {
                events.push(closed_frame(feed.last(), reason));
                break;
            }
            Next::Idle | Next::ShuttingDown => break,
        }
    }
    metrics::counter!(EVENTS_SENT).increment(events.len() as u64);
    let page = wire::ReviewEventPage {
        seq: u64::try_from(feed.last()).unwrap_or(0),
        events,
    };
    Ok(json_response(StatusCode::OK, &page))
}

fn frame(event: &ReviewEvent) -> wire::ReviewEventFrame {
    wire::ReviewEventFrame {
        id: u64::try_from(event.seq).unwrap_or(0),
        event: event.kind.as_str().to_owned(),
        data: serde_json::from_str(&event.data).unwrap_or(serde_json::Value::Null),
    }
}

fn closed_frame(last: i64, reason: &str) -> wire::ReviewEventFrame {
    wire::ReviewEventFrame {
        id: u64::try_from(last).unwrap_or(0),
        event: "closed".into(),
        data: serde_json::json!({ "reason": reason }),
    }
}

/// Frames queued for a stream's connection before its writer waits.
const FRAMES_QUEUED: usize = 8;

/// Starts the stream's writer task and answers with its body.
fn sse(mut feed: Feed, keep_alive: Duration, mut gone: GoneFuture) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(FRAMES_QUEUED);
    tokio::spawn(async move {
        if tx
            .send(Bytes::from(format!("retry: {RETRY_MS}\n\n")))
            .await
            .is_err()
        {
            return;
        }
        loop {
            let next = tokio::select! {
                next = feed.next(keep_alive) => next,
                () = tx.closed() => return,
                // The feed (and its place) goes with this task.
                () = &mut gone => return,
            };
            let (bytes, last) = match next {
                Ok(Next::Event(event)) => (sse_frame(&event), false),
                Ok(Next::Revoked(event)) => (sse_frame(&event), true),
                Ok(Next::Closed(reason)) => (
                    Bytes::from(format!(
                        "event: closed\ndata: {{\"reason\":\"{reason}\"}}\n\n"
                    )),
                    true,
                ),
                Ok(Next::Idle) => (Bytes::from_static(b": keep-alive\n\n"), false),
                Ok(Next::ShuttingDown) => (
                    Bytes::from_static(b": the server is shutting down; reconnect\n\n"),
                    true,
                ),
                Err(error) => {
                    tracing::warn!(%error, "a review event stream ended on an error; the client reconnects");
                    return;
                }
            };
            let is_event = bytes.starts_with(b"id:") || bytes.starts_with(b"event:");
            let sent = tokio::select! {
                sent = tx.send(bytes) => sent.is_ok(),
                () = &mut gone => false,
            };
            if !sent {
                return;
            }
            if is_event {
                metrics::counter!(EVENTS_SENT).increment(1);
            }
            if last {
                return;
            }
        }
    });
    let mut response = Response::new(Body::new(SseBody { rx }));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Proxies that buffer (nginx) pass the stream through as it comes.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn sse_frame(event: &ReviewEvent) -> Bytes {
    // `data` is one line of compact JSON (the catalog builds it with
    // serde_json, which escapes line breaks).
    Bytes::from(format!(
        "id: {}\nevent: {}\ndata: {}\n\n",
        event.seq,
        event.kind.as_str(),
        event.data
    ))
}

/// A stream's body: the frames its writer task queues.
struct SseBody {
    rx: mpsc::Receiver<Bytes>,
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|frame| frame.map(|bytes| Ok(Frame::data(bytes))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_takes_after_and_a_bounded_wait_only() {
        let q = EventsQuery::parse(Some("after=7&wait=3")).unwrap();
        assert_eq!((q.after, q.wait), (7, Some(3)));
        assert_eq!(EventsQuery::parse(None).unwrap().after, 0);
        for bad in ["after=-1", "wait=26", "after=x", "token=abc", "after=1&t=2"] {
            assert!(EventsQuery::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_is_chosen_only_when_accepted() {
        let mut headers = HeaderMap::new();
        assert!(!wants_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/html, application/json;q=0.9"),
        );
        assert!(wants_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        assert!(!wants_json(&headers));
    }
}

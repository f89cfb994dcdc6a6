//! The *floor* reference server: the fastest possible server of the same shape
//! as planshare's paste API, against which every planshare figure is a ratio.
//!
//! It is plain hyper 1 HTTP/1.1 on tokio, one task per connection, keep-alive,
//! `TCP_NODELAY`, no routing, no storage, no logging. Every request is answered
//! `200` with a fixed body `{"data":"<size base64url characters>"}` built once
//! at start-up, except `POST`, whose body is read completely and answered
//! `201 {"id":"AAAAAAAAAAAAAAAA"}`. Both carry
//! `Content-Type: application/json;charset=utf-8` (as upstream answers).

use crate::payload::{Rng, data_json, random_base64url};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// The id every `POST` is answered with.
pub const REFERENCE_ID: &str = "AAAAAAAAAAAAAAAA";

const JSON_UTF8: &str = "application/json;charset=utf-8";

#[derive(Debug)]
struct Bodies {
    fetch: Bytes,
    created: Bytes,
}

/// Serves `listener` forever with `size`-character `data` bodies.
pub async fn serve(listener: TcpListener, size: usize) -> anyhow::Result<()> {
    let data = random_base64url(&mut Rng::from_entropy(size as u64), size);
    let bodies = Arc::new(Bodies {
        fetch: Bytes::from(data_json(&data)),
        created: Bytes::from(format!("{{\"id\":\"{REFERENCE_ID}\"}}")),
    });
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors or a connection reset before accept:
                // back off briefly instead of spinning or dying.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let bodies = Arc::clone(&bodies);
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(request, Arc::clone(&bodies)));
            // A client hanging up mid-request is not our problem.
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(
    request: Request<Incoming>,
    bodies: Arc<Bodies>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (status, body) = if request.method() == Method::POST {
        // Read the upload completely, as a real server must before answering.
        request.into_body().collect().await?;
        (StatusCode::CREATED, bodies.created.clone())
    } else {
        (StatusCode::OK, bodies.fetch.clone())
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(JSON_UTF8));
    Ok(response)
}

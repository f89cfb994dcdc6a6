//! The review API calls the measurements set themselves up with: create a
//! review, mint a reviewer link, PUT a comment set — over one keep-alive
//! connection ([`Conn`]), failing on any unexpected answer.

use anyhow::{Context as _, bail};
use bytes::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Method, StatusCode, Uri};
use loadtests::client::{Conn, Reply};
use loadtests::payload::{Rng, random_base64url};
use std::net::SocketAddr;
use std::time::Duration;

/// The admin token the run's servers get, for `/metrics`.
pub(crate) const ADMIN_TOKEN: &str = "loadtest-reviews-admin-token";

/// The value of the gauge `planshare_review_streams_open` in a Prometheus
/// text exposition (`None` when the line is missing: no stream was ever
/// opened, or metrics are off).
pub(crate) fn streams_open(metrics: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let rest = line.strip_prefix("planshare_review_streams_open")?;
        // The bare name, or the name with labels: not a longer name.
        let rest = match rest.strip_prefix('{') {
            Some(labelled) => &labelled[labelled.find('}')? + 1..],
            None => rest,
        };
        if !rest.starts_with(' ') {
            return None;
        }
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// How long one setup call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A review the runner created: its id and owner token.
#[derive(Debug, Clone)]
pub(crate) struct Review {
    pub(crate) id: String,
    pub(crate) owner: String,
}

impl Review {
    /// `/api/v1/reviews/<id><rest>`.
    pub(crate) fn path(&self, rest: &str) -> anyhow::Result<Uri> {
        format!("/api/v1/reviews/{}{rest}", self.id)
            .parse()
            .with_context(|| format!("review id {:?} does not make a path", self.id))
    }
}

/// A connection for setup calls, with the data of the first versions.
pub(crate) struct Api {
    conn: Conn,
    rng: Rng,
}

fn bearer(token: &str) -> anyhow::Result<HeaderValue> {
    HeaderValue::from_str(&format!("Bearer {token}")).context("token is not header text")
}

fn json_headers(token: Option<&str>) -> anyhow::Result<Vec<(HeaderName, HeaderValue)>> {
    let mut headers = vec![(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    if let Some(token) = token {
        headers.push((AUTHORIZATION, bearer(token)?));
    }
    Ok(headers)
}

fn field(reply: &Reply, name: &str, what: &str) -> anyhow::Result<String> {
    let json: serde_json::Value =
        serde_json::from_slice(&reply.body).with_context(|| format!("{what}: not JSON"))?;
    json.get(name)
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .with_context(|| format!("{what}: no string `{name}` in the answer"))
}

fn expect(reply: &Reply, status: StatusCode, what: &str) -> anyhow::Result<()> {
    if reply.status != status {
        bail!(
            "{what}: HTTP {} (expected {status}): {}",
            reply.status,
            String::from_utf8_lossy(&reply.body[..reply.body.len().min(200)])
        );
    }
    Ok(())
}

impl Api {
    pub(crate) async fn connect(addr: SocketAddr) -> anyhow::Result<Self> {
        Ok(Self {
            conn: Conn::connect_timeout(addr, CALL_TIMEOUT).await?,
            rng: Rng::from_entropy(0x7e71e),
        })
    }

    async fn call(
        &mut self,
        method: Method,
        uri: Uri,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> anyhow::Result<Reply> {
        tokio::time::timeout(CALL_TIMEOUT, self.conn.request(method, uri, headers, body))
            .await
            .context("no answer within 30 s")?
    }

    /// `POST /api/v1/reviews` with a first version of `size` characters.
    pub(crate) async fn create_review(&mut self, size: usize) -> anyhow::Result<Review> {
        let data = String::from_utf8(random_base64url(&mut self.rng, size.max(1)))?;
        let digest = String::from_utf8(random_base64url(&mut self.rng, 43))?;
        self.create_review_with(&data, &digest).await
    }

    /// `POST /api/v1/reviews` with a first version of `data` (base64url)
    /// and `digest`.
    pub(crate) async fn create_review_with(
        &mut self,
        data: &str,
        digest: &str,
    ) -> anyhow::Result<Review> {
        let body = format!(r#"{{"version":{{"data":"{data}","digest":"{digest}"}}}}"#);
        let reply = self
            .call(
                Method::POST,
                Uri::from_static("/api/v1/reviews"),
                &json_headers(None)?,
                Bytes::from(body),
            )
            .await
            .context("creating a review")?;
        expect(&reply, StatusCode::CREATED, "creating a review")?;
        Ok(Review {
            id: field(&reply, "id", "creating a review")?,
            owner: field(&reply, "ownerToken", "creating a review")?,
        })
    }

    /// `POST …/links` as the owner: the new link's token.
    pub(crate) async fn mint_link(&mut self, review: &Review) -> anyhow::Result<String> {
        let reply = self
            .call(
                Method::POST,
                review.path("/links")?,
                &json_headers(Some(&review.owner))?,
                Bytes::from_static(b"{}"),
            )
            .await
            .context("minting a reviewer link")?;
        expect(&reply, StatusCode::CREATED, "minting a reviewer link")?;
        field(&reply, "token", "minting a reviewer link")
    }

    /// The server's `planshare_review_streams_open` gauge now (`None`:
    /// not exposed yet).
    pub(crate) async fn streams_open(&mut self) -> anyhow::Result<Option<f64>> {
        let reply = self
            .call(
                Method::GET,
                Uri::from_static("/metrics"),
                &[(AUTHORIZATION, bearer(ADMIN_TOKEN)?)],
                Bytes::new(),
            )
            .await
            .context("GET /metrics")?;
        expect(&reply, StatusCode::OK, "GET /metrics")?;
        Ok(streams_open(&String::from_utf8_lossy(&reply.body)))
    }

    /// Polls the streams gauge until it reads 0 or `within` has passed;
    /// the time it took (`None`: still above 0, or no gauge).
    pub(crate) async fn wait_streams_released(
        &mut self,
        within: Duration,
    ) -> anyhow::Result<Option<Duration>> {
        let started = std::time::Instant::now();
        loop {
            match self.streams_open().await? {
                Some(open) if open <= 0.0 => return Ok(Some(started.elapsed())),
                None => return Ok(None),
                Some(_) if started.elapsed() >= within => return Ok(None),
                Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// `PUT …/comments` as `token` with `body` (see
    /// [`loadtests::generator::comment_body`]).
    pub(crate) async fn put_comments(
        &mut self,
        review: &Review,
        token: &str,
        body: Bytes,
    ) -> anyhow::Result<()> {
        let reply = self
            .call(
                Method::PUT,
                review.path("/comments")?,
                &json_headers(Some(token))?,
                body,
            )
            .await
            .context("PUT comments")?;
        expect(&reply, StatusCode::OK, "PUT comments")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_streams_gauge() {
        let text = "# TYPE planshare_review_streams_open gauge\n\
                    planshare_review_streams_open_total 9\n\
                    planshare_review_streams_open 10000\n\
                    planshare_requests_total{route=\"x\"} 3\n";
        assert_eq!(streams_open(text), Some(10_000.0));
        assert_eq!(
            streams_open("planshare_review_streams_open{instance=\"a\"} 2\n"),
            Some(2.0)
        );
        assert_eq!(streams_open("planshare_review_streams_openx 2\n"), None);
        assert_eq!(streams_open("# nothing\n"), None);
    }
}

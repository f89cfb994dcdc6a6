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

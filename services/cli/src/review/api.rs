//! The review API (`/api/v1/reviews`) over [`PasteClient`]'s transport.
//!
//! Tokens travel only as `Authorization: Bearer`; paths carry ids that were
//! checked to be 6–16 letters or digits, never a token or a key. Error
//! answers become [`CliError`]s whose text is the service's, escaped, and
//! never echoes a token.

use api_types::ErrorCode;
use std::time::Duration;

use api_types::reviews as wire;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use crate::client::{Answer, PasteClient, printable, review_unavailable};
use crate::error::CliError;

/// A review API at a base URL, acting with one bearer token (or, for
/// creating a review, the API key when there is one).
pub struct ReviewApi {
    client: PasteClient,
    /// Without a total timeout (a stream lasts), with a read timeout.
    stream_http: reqwest::Client,
}

/// How long a stream may stay silent (the server sends a keep-alive
/// comment every 15 s by default) before the watcher reconnects.
const STREAM_READ_TIMEOUT: Duration = Duration::from_secs(60);

impl ReviewApi {
    /// Wraps `client` (its base is the review API's base).
    pub fn new(client: PasteClient) -> Result<Self, CliError> {
        let stream_http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(STREAM_READ_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("planshare/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| review_unavailable(client.base(), &format!("cannot set up HTTP: {e}")))?;
        Ok(ReviewApi {
            client: client.for_reviews(),
            stream_http,
        })
    }

    /// The API's base URL.
    pub fn base(&self) -> &str {
        self.client.base()
    }

    /// `POST /api/v1/reviews` (with the API key, if configured).
    pub async fn create(
        &self,
        request: &wire::CreateReviewRequest,
    ) -> Result<wire::CreateReviewResponse, CliError> {
        let answer = self
            .client
            .send_json(
                Method::POST,
                "/api/v1/reviews",
                None,
                Some(to_json(request)?),
                false,
            )
            .await?;
        expect(&answer, self.base(), &[StatusCode::CREATED])
    }

    /// `GET /api/v1/reviews/{id}`.
    pub async fn get(&self, id: &str, token: &str) -> Result<wire::ReviewView, CliError> {
        let answer = self
            .client
            .send_json(Method::GET, &path(id, ""), Some(token), None, true)
            .await?;
        expect(&answer, self.base(), &[StatusCode::OK])
    }

    /// `GET /api/v1/reviews/{id}/versions/{n}`.
    pub async fn version(
        &self,
        id: &str,
        token: &str,
        n: u64,
    ) -> Result<wire::VersionBody, CliError> {
        let answer = self
            .client
            .send_json(
                Method::GET,
                &path(id, &format!("/versions/{n}")),
                Some(token),
                None,
                true,
            )
            .await?;
        expect(&answer, self.base(), &[StatusCode::OK])
    }

    /// `POST /api/v1/reviews/{id}/versions`. Retrying is safe: a repeat of
    /// a push that got through answers "unchanged".
    pub async fn push(
        &self,
        id: &str,
        token: &str,
        request: &wire::PushVersionRequest,
    ) -> Result<wire::PushVersionResponse, CliError> {
        let answer = self
            .client
            .send_json(
                Method::POST,
                &path(id, "/versions"),
                Some(token),
                Some(to_json(request)?),
                true,
            )
            .await?;
        expect(&answer, self.base(), &[StatusCode::CREATED, StatusCode::OK])
    }

    /// `PUT /api/v1/reviews/{id}/comments`: the caller's comment set,
    /// compare-and-set on `base`. `Ok(None)`: the set changed since it
    /// was read (`409 comments-changed`); read it again.
    pub async fn put_comments(
        &self,
        id: &str,
        token: &str,
        request: &wire::PutCommentsRequest,
    ) -> Result<Option<wire::PutCommentsResponse>, CliError> {
        let answer = self
            .client
            .send_json(
                Method::PUT,
                &path(id, "/comments"),
                Some(token),
                Some(to_json(request)?),
                false,
            )
            .await?;
        if answer.status == StatusCode::CONFLICT
            && answer.code().as_deref().map(ErrorCode::parse)
                == Some(Some(ErrorCode::CommentsChanged))
        {
            return Ok(None);
        }
        expect(&answer, self.base(), &[StatusCode::OK]).map(Some)
    }

    /// `POST /api/v1/reviews/{id}/links`.
    pub async fn add_link(
        &self,
        id: &str,
        token: &str,
        role: &str,
    ) -> Result<wire::CreatedLink, CliError> {
        // `role` is one of two fixed words.
        let body = format!(r#"{{"role":"{role}"}}"#);
        let answer = self
            .client
            .send_json(
                Method::POST,
                &path(id, "/links"),
                Some(token),
                Some(body),
                false,
            )
            .await?;
        expect(&answer, self.base(), &[StatusCode::CREATED])
    }

    /// `DELETE /api/v1/reviews/{id}/links/{link}`.
    pub async fn revoke(&self, id: &str, token: &str, link: &str) -> Result<(), CliError> {
        let answer = self
            .client
            .send_json(
                Method::DELETE,
                &path(id, &format!("/links/{link}")),
                Some(token),
                None,
                true,
            )
            .await?;
        match answer.status {
            StatusCode::NO_CONTENT | StatusCode::OK => Ok(()),
            _ => Err(failure(&answer, self.base())),
        }
    }

    /// `PUT /api/v1/reviews/{id}/deadline` (the owner).
    pub async fn set_deadline(
        &self,
        id: &str,
        token: &str,
        request: &wire::ReviewDeadline,
    ) -> Result<wire::ReviewDeadline, CliError> {
        let answer = self
            .client
            .send_json(
                Method::PUT,
                &path(id, "/deadline"),
                Some(token),
                Some(to_json(request)?),
                true,
            )
            .await?;
        expect(&answer, self.base(), &[StatusCode::OK])
    }

    /// `POST /api/v1/reviews/{id}/subscriptions`: a webhook's answer
    /// carries its secret (shown once).
    pub async fn subscribe(
        &self,
        id: &str,
        token: &str,
        request: &api_types::notify::CreateSubscriptionRequest,
    ) -> Result<api_types::notify::CreatedSubscription, CliError> {
        let answer = self
            .client
            .send_json(
                Method::POST,
                &path(id, "/subscriptions"),
                Some(token),
                Some(to_json(request)?),
                false,
            )
            .await?;
        expect(&answer, self.base(), &[StatusCode::CREATED])
    }

    /// `GET /api/v1/reviews/{id}/subscriptions`.
    pub async fn subscriptions(
        &self,
        id: &str,
        token: &str,
    ) -> Result<api_types::notify::SubscriptionList, CliError> {
        let answer = self
            .client
            .send_json(
                Method::GET,
                &path(id, "/subscriptions"),
                Some(token),
                None,
                true,
            )
            .await?;
        expect(&answer, self.base(), &[StatusCode::OK])
    }

    /// `DELETE /api/v1/reviews/{id}/subscriptions/{sid}`.
    pub async fn unsubscribe(&self, id: &str, token: &str, sid: &str) -> Result<(), CliError> {
        let answer = self
            .client
            .send_json(
                Method::DELETE,
                &path(id, &format!("/subscriptions/{sid}")),
                Some(token),
                None,
                true,
            )
            .await?;
        match answer.status {
            StatusCode::NO_CONTENT => Ok(()),
            _ => Err(failure(&answer, self.base())),
        }
    }

    /// `GET /api/v1/reviews/{id}/subscriptions/{sid}/deliveries`.
    pub async fn deliveries(
        &self,
        id: &str,
        token: &str,
        sid: &str,
    ) -> Result<api_types::notify::DeliveryList, CliError> {
        let answer = self
            .client
            .send_json(
                Method::GET,
                &path(id, &format!("/subscriptions/{sid}/deliveries")),
                Some(token),
                None,
                true,
            )
            .await?;
        expect(&answer, self.base(), &[StatusCode::OK])
    }

    /// `POST /api/v1/reviews/{id}/decision`.
    pub async fn decide(
        &self,
        id: &str,
        token: &str,
        request: &wire::DecisionRequest,
    ) -> Result<wire::DecisionInfo, CliError> {
        let answer = self
            .client
            .send_json(
                Method::POST,
                &path(id, "/decision"),
                Some(token),
                Some(to_json(request)?),
                false,
            )
            .await?;
        expect(&answer, self.base(), &[StatusCode::OK])
    }

    /// Opens the event stream after `last` (as `Last-Event-ID`). `Ok(Err)`:
    /// the server answered, but not with a stream (the error to act on);
    /// `Err`: it could not be reached.
    pub async fn events(
        &self,
        id: &str,
        token: &str,
        last: u64,
    ) -> Result<Result<reqwest::Response, CliError>, CliError> {
        let url = format!("{}{}", self.client.base(), path(id, "/events"));
        let response = self
            .stream_http
            .get(url)
            .bearer_auth(token)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header("Last-Event-ID", last.to_string())
            .send()
            .await
            .map_err(|e| self.client.unreachable(&e))?;
        if response.status() == StatusCode::OK {
            return Ok(Ok(response));
        }
        let answer = Answer::read(response, &self.client).await?;
        Ok(Err(failure(&answer, self.base())))
    }
}

fn path(id: &str, rest: &str) -> String {
    format!("/api/v1/reviews/{id}{rest}")
}

fn to_json(value: &impl serde::Serialize) -> Result<String, CliError> {
    serde_json::to_string(value).map_err(|e| CliError::Output(e.to_string()))
}

/// The body of an answer with one of `ok`'s statuses, else its error. A
/// success that is not JSON at all (a web page) is not a review API.
fn expect<T: DeserializeOwned>(
    answer: &Answer,
    base: &str,
    ok: &[StatusCode],
) -> Result<T, CliError> {
    if !ok.contains(&answer.status) {
        return Err(failure(answer, base));
    }
    serde_json::from_slice(&answer.body).map_err(|e| {
        if serde_json::from_slice::<serde::de::IgnoredAny>(&answer.body).is_err() {
            CliError::NoReviewApi(printable(base))
        } else {
            CliError::ReviewService(format!("unreadable review API answer: {e}"))
        }
    })
}

/// The error for a review API answer that is not a success. Every 404 and
/// 405 of a planshare review API carries a `code`; one without (upstream's
/// generic 404, or another service's) means there is no review API there.
pub fn failure(answer: &Answer, base: &str) -> CliError {
    let message = answer.message().unwrap_or_default();
    let code = answer.code();
    // `None`: no code at all (not a planshare review API); `Some(None)`: a
    // code this build does not know.
    let known = code.as_deref().map(ErrorCode::parse);
    match (answer.status, known) {
        (StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED, None) => {
            CliError::NoReviewApi(printable(base))
        }
        (StatusCode::NOT_FOUND, Some(Some(ErrorCode::ReviewNotFound))) => CliError::ReviewNotFound,
        (StatusCode::NOT_FOUND, _) if !message.is_empty() => CliError::AdminNotFound(message),
        (StatusCode::CONFLICT, Some(Some(ErrorCode::StaleParent))) => {
            CliError::Rejected(format!("someone else pushed a version first ({message})"))
        }
        (StatusCode::CONFLICT, _) => CliError::Rejected(message),
        (StatusCode::UNPROCESSABLE_ENTITY, Some(Some(ErrorCode::TargetNotAllowed))) => {
            CliError::Usage(format!("the server refused the target: {message}"))
        }
        (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, _) => {
            CliError::Unauthorized(if message.is_empty() {
                format!("HTTP {}", answer.status.as_u16())
            } else {
                message
            })
        }
        (StatusCode::PAYLOAD_TOO_LARGE, _) => CliError::TooLarge(if message.is_empty() {
            "the review API refused the size".to_owned()
        } else {
            message
        }),
        _ => match PasteClient::unexpected(answer) {
            CliError::Unavailable(why) => review_unavailable(&printable(base), &why),
            CliError::Service(why) => CliError::ReviewService(why),
            other => other,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer::for_tests(StatusCode::from_u16(status).unwrap(), body)
    }

    #[test]
    fn a_404_without_a_code_means_no_review_api() {
        let base = "http://127.0.0.1:9";
        let generic = r#"{"error":"Not found. Valid paths: POST /api/paste, GET /api/paste/:id"}"#;
        for (status, body) in [(404, generic), (404, "<html>nope</html>"), (405, "")] {
            let error = failure(&answer(status, body), base);
            assert!(matches!(error, CliError::NoReviewApi(_)), "{status} {body}");
            assert!(
                error
                    .to_string()
                    .contains("the paste service at http://127.0.0.1:9 has no review API"),
                "{error}"
            );
        }
        let ours = r#"{"error":"review not found","code":"review-not-found"}"#;
        assert!(matches!(
            failure(&answer(404, ours), base),
            CliError::ReviewNotFound
        ));
        let part = r#"{"error":"this review has no such link","code":"link-not-found"}"#;
        assert!(matches!(
            failure(&answer(404, part), base),
            CliError::AdminNotFound(_)
        ));
        // A web page where JSON was expected: not a review API either.
        let page: Result<wire::ReviewView, _> =
            expect(&answer(200, "<!doctype html>"), base, &[StatusCode::OK]);
        assert!(matches!(page, Err(CliError::NoReviewApi(_))));
        let odd: Result<wire::ReviewView, _> =
            expect(&answer(200, r#"{"id":1}"#), base, &[StatusCode::OK]);
        assert!(matches!(odd, Err(CliError::ReviewService(_))));
    }

    #[test]
    fn outages_and_odd_answers_speak_of_the_review_service() {
        let base = "http://127.0.0.1:9";
        let down = failure(&answer(503, r#"{"error":"overloaded"}"#), base);
        assert_eq!(
            down.to_string(),
            "review service at http://127.0.0.1:9 unavailable: HTTP 503: overloaded"
        );
        assert_eq!(down.exit_code(), 7);
        let odd = failure(&answer(418, "{}"), base);
        assert_eq!(odd.to_string(), "review service error: HTTP 418");
        assert_eq!(odd.exit_code(), 11);
    }
}

//! The HTTP halves the review handlers share: the wire views of what the
//! service answers, the checks of body fields, and the part of the
//! response budget an answer made of blobs holds (see `crate::answer`).

use api_types::reviews as wire;
use api_types::rules;
use axum::Extension;
use axum::body::Body;
use axum::extract::RawPathParams;
use axum::response::Response;
use http::header;

use super::service::{Admit, Caller, ReviewRead};
use crate::answer::{self, PasteBody, Reserved, ResponseBudget};
use crate::error::ApiError;
use crate::ratelimit::ClientIp;
use crate::response::JSON_CONTENT_TYPE;

pub(crate) use crate::body::check_data;

/// The first part of an answer's room in the response budget, counted
/// against the request's client.
pub(crate) async fn reserve(
    budget: &ResponseBudget,
    client: Option<Extension<ClientIp>>,
) -> Result<Reserved, ApiError> {
    let client = client.map(|Extension(ClientIp(ip))| ip);
    Ok(budget.reserve(answer::PART, client).await?)
}

/// Makes room in the response budget for an answer before its blobs are
/// read (see `answer`): a client that asks and never reads holds its share,
/// and no more, and with the budget spent no more blobs are loaded.
pub(crate) struct BudgetAdmit<'a> {
    budget: &'a ResponseBudget,
    held: &'a mut Reserved,
}

impl<'a> BudgetAdmit<'a> {
    pub(crate) fn new(budget: &'a ResponseBudget, held: &'a mut Reserved) -> Self {
        BudgetAdmit { budget, held }
    }
}

impl Admit<ApiError> for BudgetAdmit<'_> {
    async fn admit(&mut self, bytes: usize) -> Result<(), ApiError> {
        // The blobs' text and the answer's JSON are both held while it is
        // built; the JSON alone afterwards (`held_json`).
        self.held
            .grow_to(self.budget, bytes.saturating_mul(2), true)
            .await
            .map_err(ApiError::from)
    }
}

/// A `200` JSON answer that holds its share of the response budget until
/// the client has taken it (or the connection is dropped).
pub(crate) async fn held_json<T: serde::Serialize>(
    budget: &ResponseBudget,
    mut held: Reserved,
    value: &T,
) -> Response {
    // Serialising the API's own types cannot fail.
    let json = serde_json::to_vec(value).unwrap_or_default();
    // What is held now is the JSON alone. The estimate can fall short when
    // the text needs escaping; the answer is built by then, so a budget
    // with no more room does not refuse it.
    held.shrink_to(json.len());
    let _ = held.grow_to(budget, json.len(), false).await;
    let mut response = Response::new(Body::new(PasteBody::whole(json, held)));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, JSON_CONTENT_TYPE);
    response
}

/// The `202` body of a deletion that left `pending` blobs to remove later.
pub(crate) fn deleted(pending: usize) -> wire::ReviewDeleted {
    wire::ReviewDeleted {
        deleted: true,
        pending_blobs: pending as u64,
        message: format!(
            "the review is deleted and can no longer be read; {pending} of its stored parts could not be removed now (storage is unavailable): the server removes them in the background, and they expire with the review at the latest"
        ),
    }
}

/// One version as the wire carries it.
pub(crate) fn version(row: tenancy::VersionRow, data: String) -> wire::VersionBody {
    wire::VersionBody {
        n: unsigned(row.n),
        digest: row.digest,
        data,
        created_at: unsigned(row.created_at),
    }
}

pub(crate) fn check_digest(digest: &str) -> Result<(), ApiError> {
    if rules::is_review_digest(digest) {
        Ok(())
    } else {
        Err(ApiError::InvalidField(
            "\"digest\" must be 43 base64url characters (an HMAC-SHA256 of the plan)".into(),
        ))
    }
}

pub(crate) fn bad_name() -> ApiError {
    ApiError::InvalidField(format!(
        "\"name\" must be 1-{} characters, not only spaces, without control characters or invisible formatting characters (zero-width spaces, direction overrides)",
        rules::REVIEW_NAME_MAX_CHARS
    ))
}

/// A name as a request gave it, normalised (NFC, trimmed) and checked.
pub(crate) fn checked_name(name: &str) -> Result<String, ApiError> {
    rules::normalize_review_name(name).ok_or_else(bad_name)
}

/// A sealed preview as a request gave it: base64url, 1 to
/// [`tenancy::MAX_SEALED_BYTES`] characters (never read: only forwarded).
pub(crate) fn checked_sealed(sealed: Option<String>) -> Result<Option<String>, ApiError> {
    match sealed {
        None => Ok(None),
        Some(s)
            if !s.is_empty()
                && s.len() <= tenancy::MAX_SEALED_BYTES
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Ok(Some(s))
        }
        Some(_) => Err(ApiError::InvalidField(format!(
            "\"sealed\" must be 1-{} base64url characters: the preview sealed under the review key",
            tenancy::MAX_SEALED_BYTES
        ))),
    }
}

/// A deadline request as the catalog takes it (Unix ms, ms): a deadline
/// in the future and before the review expires; reminders 1 minute to 30
/// days apart.
pub(crate) fn checked_deadline(
    caller: &Caller,
    body: &wire::ReviewDeadline,
) -> Result<(Option<i64>, Option<i64>), ApiError> {
    let head = &caller.principal.review;
    let now = crate::within::now_ms_i64();
    let deadline = body.deadline.map(|d| i64::try_from(d).unwrap_or(i64::MAX));
    if let Some(d) = deadline {
        if d <= now {
            return Err(ApiError::InvalidField(
                "\"deadline\" is in the past: give a time to come (Unix ms)".into(),
            ));
        }
        if d > head.expires_at {
            return Err(ApiError::InvalidField(format!(
                "\"deadline\" is after the review expires ({}): choose an earlier one",
                head.expires_at
            )));
        }
    }
    let remind = match body.remind_every {
        None => None,
        Some(secs @ 60..=2_592_000) => Some(i64::try_from(secs).unwrap_or(0) * 1000),
        Some(_) => {
            return Err(ApiError::InvalidField(
                "\"remindEvery\" must be 60 to 2592000 seconds (a minute to 30 days)".into(),
            ));
        }
    };
    Ok((deadline, remind))
}

/// A new link's role: `reviewer` when absent.
pub(crate) fn link_role(role: Option<&str>) -> Result<tenancy::Role, ApiError> {
    match role {
        None | Some("reviewer") => Ok(tenancy::Role::Reviewer),
        Some("approver") => Ok(tenancy::Role::Approver),
        Some(_) => Err(ApiError::InvalidField(
            "\"role\" must be \"reviewer\" or \"approver\"".into(),
        )),
    }
}

pub(crate) fn bad_decision() -> ApiError {
    ApiError::InvalidField("\"decision\" must be \"approved\" or \"changes_requested\"".into())
}

/// A comment set's revision as the client read it (`base`).
pub(crate) fn base_revision(base: u64) -> Result<i64, ApiError> {
    i64::try_from(base).map_err(|_| {
        ApiError::InvalidField(
            "\"base\" must be the revision (seq) of your comment set as you read it, or 0 for none"
                .into(),
        )
    })
}

pub(crate) fn signed(n: u64, field: &str) -> Result<i64, ApiError> {
    i64::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
        ApiError::InvalidField(format!("\"{field}\" must be a version number (1 or more)"))
    })
}

pub(crate) fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(crate) fn path_param<'a>(params: &'a RawPathParams, name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// The wire view of a review for `caller`.
pub(crate) fn review(caller: &Caller, read: ReviewRead) -> wire::ReviewView {
    let ReviewRead {
        snapshot,
        comments,
        feedback,
    } = read;
    let principal = &caller.principal;
    let owner = principal.role == tenancy::Role::Owner;
    let decisions: Vec<wire::DecisionInfo> = snapshot
        .decisions
        .iter()
        .zip(feedback)
        .map(|(row, data)| decision_info(row, data))
        .collect();
    // This round's decision, while the round is decided.
    let current = decisions
        .last()
        .filter(|d| {
            snapshot.head.state != tenancy::ReviewState::Open
                && d.round == unsigned(snapshot.head.round)
        })
        .cloned();
    // The name bound now (the extractor's may predate this request's read).
    let bound = snapshot
        .comments
        .iter()
        .find(|c| c.writer == principal.link)
        .map(|c| c.name.clone())
        .or_else(|| principal.name.clone());
    wire::ReviewView {
        id: snapshot.head.id.clone(),
        state: snapshot.head.state.as_str().to_owned(),
        round: unsigned(snapshot.head.round),
        you: wire::You {
            role: principal.role.as_str().to_owned(),
            link: principal.link.clone(),
            name: bound,
        },
        latest: unsigned(snapshot.head.latest),
        versions: snapshot
            .versions
            .iter()
            .map(|v| wire::VersionInfo {
                n: unsigned(v.n),
                digest: v.digest.clone(),
                created_at: unsigned(v.created_at),
                size: unsigned(v.blob.bytes),
                round: unsigned(v.round),
                progress: v.progress,
            })
            .collect(),
        comments: snapshot
            .comments
            .iter()
            .zip(comments)
            .map(|(row, data)| wire::CommentSet {
                writer: row.writer.clone(),
                name: row.name.clone(),
                role: row.role.as_str().to_owned(),
                version: unsigned(row.version),
                data,
                updated_at: unsigned(row.updated_at),
                seq: unsigned(row.seq),
            })
            .collect(),
        links: owner.then(|| {
            snapshot
                .links
                .iter()
                .map(|l| wire::LinkInfo {
                    id: l.id.clone(),
                    role: l.role.as_str().to_owned(),
                    name: l.name.clone(),
                    created_at: unsigned(l.created_at),
                })
                .collect()
        }),
        decision: current,
        decisions,
        seq: unsigned(snapshot.head.seq),
        expires_at: unsigned(snapshot.head.expires_at),
        deadline: snapshot.deadline.map(unsigned),
        remind_every: snapshot.remind_every.map(|ms| unsigned(ms / 1000)),
    }
}

/// The `base=<revision>` of a withdrawal's query, if any.
pub(crate) fn base_of(query: Option<&str>) -> Result<Option<i64>, ApiError> {
    let bad = || {
        ApiError::InvalidField(
            "query: expected nothing or base=<the revision (seq) of your comment set, 0 for none>"
                .into(),
        )
    };
    let mut base = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("base", value)) if base.is_none() => {
                let value: u64 = value.parse().map_err(|_| bad())?;
                base = Some(i64::try_from(value).map_err(|_| bad())?);
            }
            _ => return Err(bad()),
        }
    }
    Ok(base)
}

/// A decision as the API shows it, with its feedback's ciphertext.
pub(crate) fn decision_info(
    row: &tenancy::DecisionRow,
    data: Option<String>,
) -> wire::DecisionInfo {
    wire::DecisionInfo {
        round: unsigned(row.round),
        version: unsigned(row.version),
        digest: row.digest.clone(),
        decision: row.state.as_str().to_owned(),
        by: wire::DecidedBy {
            role: row.by.role.as_str().to_owned(),
            link: row.by.link.clone(),
            name: row.by.name.clone(),
        },
        data,
        decided_at: unsigned(row.decided_at),
        voided_by: row.voided_by.map(unsigned),
    }
}

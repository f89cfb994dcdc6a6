//! Bodies of the review API (`/api/v1/reviews`). Every `data` field is an
//! encrypted short-link payload (the client's ciphertext; the server never
//! sees plaintext); every time is Unix milliseconds. Requests refuse
//! unknown fields.

use serde::{Deserialize, Deserializer, Serialize};

/// A count or sequence number: JSON has one number type, so `2.0` is the
/// number `2` (as JSON Schema's `integer` says) and is read as such.
fn whole<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    if let Some(n) = n.as_u64() {
        return Ok(n);
    }
    match n.as_f64() {
        // 2^53: beyond it a float no longer holds every whole number.
        Some(f) if f.fract() == 0.0 && (0.0..=9_007_199_254_740_992.0).contains(&f) =>
        {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Ok(f as u64)
        }
        _ => Err(serde::de::Error::custom(
            "expected a whole number of 0 or more",
        )),
    }
}

fn whole_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    whole(d).map(Some)
}

/// A version's ciphertext and the client's digest of its plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VersionInput {
    /// The encrypted share payload (base64url).
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub data: String,
    /// base64url(HMAC-SHA256(review key, plan markdown)): 43 characters.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_-]{43}$"))]
    pub digest: String,
}

/// `POST /api/v1/reviews` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateReviewRequest {
    /// The first version.
    pub version: VersionInput,
    /// Lifetime in seconds within the tenant's limits (default: the
    /// tenant's default paste lifetime).
    #[serde(
        default,
        deserialize_with = "whole_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 3_153_600_000_u64))]
    pub ttl: Option<u64>,
}

/// `POST /api/v1/reviews` response. The owner token is shown only here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateReviewResponse {
    /// The review id.
    pub id: String,
    /// The owner's bearer token (43 base64url characters).
    pub owner_token: String,
    /// The first version's number: 1.
    pub version: u64,
    /// When the review and everything of it expires.
    pub expires_at: u64,
}

/// Who the presented token belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct You {
    /// `owner`, `reviewer` or `approver`.
    pub role: String,
    /// The writer id: `owner` or the link's id.
    pub link: String,
    /// The name this writer bound with its first comments, if any.
    pub name: Option<String>,
}

/// One version's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// 1, 2, …
    pub n: u64,
    /// The client's digest.
    pub digest: String,
    /// When it was pushed.
    pub created_at: u64,
    /// Stored size in bytes.
    pub size: u64,
    /// The round it was pushed in (1 from a server without rounds).
    #[serde(default = "one")]
    pub round: u64,
    /// Its pusher said only checklist marks changed from the version
    /// before (a progress push, which keeps an approval). A claim: clients
    /// check it by comparing the two plans.
    #[serde(default)]
    pub progress: bool,
}

fn one() -> u64 {
    1
}

fn reviewer() -> String {
    "reviewer".to_owned()
}

/// One writer's comment set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CommentSet {
    /// `owner` or the reviewer link's id.
    pub writer: String,
    /// The writer's bound name.
    pub name: String,
    /// The writer's role: `owner`, `reviewer` or `approver` (what the
    /// thread rules go by: who may resolve a thread).
    #[serde(default = "reviewer")]
    pub role: String,
    /// The version the comments were made on.
    pub version: u64,
    /// The encrypted comment set.
    pub data: String,
    /// When it was last stored.
    pub updated_at: u64,
    /// The set's revision (the review's `seq` of the event that stored
    /// it): what a writer sends back as `base` to replace exactly this set.
    /// 0 from a server that predates revisions.
    #[serde(default)]
    pub seq: u64,
}

/// One live link (shown to the owner only; never its token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LinkInfo {
    /// The link id.
    pub id: String,
    /// `reviewer` or `approver`.
    #[serde(default = "reviewer")]
    pub role: String,
    /// The name it bound, once it has written.
    pub name: Option<String>,
    /// When it was minted.
    pub created_at: u64,
}

/// Who made a decision, as they were then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecidedBy {
    /// `owner` or `approver`.
    pub role: String,
    /// The writer id: `owner` or the approver link's id.
    pub link: String,
    /// The name the decider had bound (an approver always has one).
    pub name: Option<String>,
}

/// One round's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DecisionInfo {
    /// The round it decided.
    pub round: u64,
    /// The version it was made on.
    pub version: u64,
    /// That version's digest: what exactly was decided.
    pub digest: String,
    /// `approved` or `changes_requested`.
    pub decision: String,
    /// Who decided.
    pub by: DecidedBy,
    /// The encrypted feedback, when some was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// When it was made.
    pub decided_at: u64,
    /// The version whose push voided this approval (a push that was not a
    /// progress push).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voided_by: Option<u64>,
}

/// `GET /api/v1/reviews/{id}` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReviewView {
    /// The review id.
    pub id: String,
    /// `open`, `approved` or `changes_requested`: this round's state.
    pub state: String,
    /// The current round: 1, then one more for each push that followed a
    /// decision (after `changes_requested`, or voiding an approval).
    #[serde(default = "one")]
    pub round: u64,
    /// The token's holder.
    pub you: You,
    /// The latest version's number.
    pub latest: u64,
    /// Every version, oldest first.
    pub versions: Vec<VersionInfo>,
    /// Every writer's comment set.
    pub comments: Vec<CommentSet>,
    /// Live reviewer and approver links (owner only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<LinkInfo>>,
    /// This round's decision, once made (absent while the state is
    /// `open`; earlier rounds' are in `decisions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionInfo>,
    /// Every decision, oldest (round 1) first.
    #[serde(default)]
    pub decisions: Vec<DecisionInfo>,
    /// The last event's sequence number (pass as `after` to follow events).
    pub seq: u64,
    /// When the review expires.
    pub expires_at: u64,
    /// The owner's deadline for a decision (Unix ms): `review.deadline`
    /// goes out when it passes undecided, and `wait`, `watch`, the hook
    /// and MCP stop waiting there. The review stays open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
    /// Seconds between reminders to the deciders while the round is
    /// undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_every: Option<u64>,
}

/// `PUT /api/v1/reviews/{id}/deadline` request and response: both absent
/// (or `null`) clears them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewDeadline {
    /// Unix ms, in the future and before the review expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub deadline: Option<u64>,
    /// Seconds between reminders, 60 to 2 592 000 (30 days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 60, maximum = 2_592_000))]
    pub remind_every: Option<u64>,
}

/// `GET /api/v1/reviews/{id}/versions/{n}` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VersionBody {
    /// The version's number.
    pub n: u64,
    /// The client's digest.
    pub digest: String,
    /// The encrypted share payload.
    pub data: String,
    /// When it was pushed.
    pub created_at: u64,
}

/// `POST /api/v1/reviews/{id}/versions` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PushVersionRequest {
    /// The encrypted share payload.
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub data: String,
    /// The client's digest of the plan (43 base64url characters).
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_-]{43}$"))]
    pub digest: String,
    /// The version this one revises: must be the latest.
    #[serde(deserialize_with = "whole")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub parent: u64,
    /// A progress push: only checklist marks (`- [ ]` and `- [x]`) differ
    /// from the parent. After an approval it keeps the approval; any other
    /// push voids it and opens the next round. The server cannot read the
    /// plans, so clients check the claim.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub progress: bool,
}

/// `POST /api/v1/reviews/{id}/versions` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PushVersionResponse {
    /// The new version's number, or the latest when unchanged.
    pub n: u64,
    /// Present (true) when the plan equals the latest version's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchanged: Option<bool>,
    /// The round the new version is in (absent when unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u64>,
}

/// `POST /api/v1/reviews/{id}/links` request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateLinkRequest {
    /// `reviewer` (the default: reads and comments) or `approver` (also
    /// decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(pattern = "^(reviewer|approver)$"))]
    pub role: Option<String>,
}

/// `POST /api/v1/reviews/{id}/links` response. The token is shown only here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedLink {
    /// The link id (for revoking it).
    pub id: String,
    /// The link's bearer token (43 base64url characters).
    pub token: String,
    /// `reviewer` or `approver`.
    #[serde(default = "reviewer")]
    pub role: String,
}

/// `PUT /api/v1/reviews/{id}/comments` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PutCommentsRequest {
    /// The writer's name: bound by the first set, the same ever after; not
    /// only white space, no control characters.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 64,
            pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
        )
    )]
    pub name: String,
    /// The version the comments were made on.
    #[serde(deserialize_with = "whole")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub version: u64,
    /// The encrypted comment set.
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub data: String,
    /// Compare-and-set: the revision (`seq`) of the writer's own set as the
    /// client last read it, 0 when it read none. When the set is no longer
    /// that one (another tab or device of the same link wrote since), the
    /// PUT is refused with `409 comments-changed` and nothing is stored.
    /// Absent: the set is replaced whatever it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub base: Option<u64>,
    /// A preview for notifications (the newest comment's first line, at most 140
    /// characters), sealed by the client under the review key exactly as
    /// a comment set is, base64url. The server forwards it untouched to the
    /// review's subscriptions; only holders of the key read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 1024, pattern = "^[A-Za-z0-9_-]+$")
    )]
    pub sealed: Option<String>,
}

/// `PUT /api/v1/reviews/{id}/comments` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PutCommentsResponse {
    /// The writer id.
    pub writer: String,
    /// When the set was stored.
    pub updated_at: u64,
    /// The stored set's revision: the `base` of the writer's next PUT.
    #[serde(default)]
    pub seq: u64,
}

/// `POST /api/v1/reviews/{id}/decision` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    /// `approved` or `changes_requested`.
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = "^(approved|changes_requested)$")
    )]
    pub decision: String,
    /// The version decided on: must be the latest, else `409
    /// stale-version` (a push came while the decider was reading).
    #[serde(deserialize_with = "whole")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub version: u64,
    /// The decider's name, bound as a first comment set binds one: an
    /// approver link that has not commented must give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 64,
            pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
        )
    )]
    pub name: Option<String>,
    /// Optional encrypted feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub data: Option<String>,
    /// A preview for notifications (the decision's note's first line, at most 140
    /// characters), sealed by the client under the review key exactly as
    /// a comment set is, base64url. The server forwards it untouched to the
    /// review's subscriptions; only holders of the key read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 1024, pattern = "^[A-Za-z0-9_-]+$")
    )]
    pub sealed: Option<String>,
}

/// One review event, as the long poll lists it and an SSE frame carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewEventFrame {
    /// The event's sequence number (the SSE `id:`).
    pub id: u64,
    /// `version`, `comments`, `links`, `decision`, `revoked` or `closed`.
    pub event: String,
    /// A small JSON object: ids, numbers and names, never content or a token.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub data: serde_json::Value,
}

/// `DELETE /api/v1/reviews/{id}` answered `202`: the review is deleted,
/// but the store could not remove some of its stored parts yet (it was
/// unavailable). They are unreachable, and the server tries again in the
/// background; what it cannot remove expires with the review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReviewDeleted {
    /// Always `true`: the review is gone.
    pub deleted: bool,
    /// Stored parts (blobs) not removed yet.
    pub pending_blobs: u64,
    /// What happened, in words.
    pub message: String,
}

/// `GET /api/v1/reviews/{id}/events` with `Accept: application/json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewEventPage {
    /// Events after `after`, oldest first (empty when the wait ran out).
    pub events: Vec<ReviewEventFrame>,
    /// The last sequence number covered: pass it as the next `after`.
    pub seq: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_may_be_written_as_floats_but_fractions_are_refused() {
        let read = |parent: &str| {
            serde_json::from_str::<PushVersionRequest>(&format!(
                r#"{{"data":"x","digest":"d","parent":{parent}}}"#
            ))
            .map(|r| r.parent)
        };
        assert_eq!(read("3").unwrap(), 3);
        assert_eq!(read("3.0").unwrap(), 3);
        assert_eq!(read("878738559.0").unwrap(), 878_738_559);
        for bad in ["3.5", "-1", "1e300", "\"3\"", "null"] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }
}

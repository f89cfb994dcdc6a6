//! Bodies of a review's notification subscriptions
//! (`/api/v1/reviews/{id}/subscriptions`): where a writer of the review
//! wants to hear of its changes, and what was delivered there.

use serde::{Deserialize, Serialize};

/// The notification types, in their wire spelling.
pub const NOTICE_TYPES: [&str; 6] = [
    "review.comment",
    "review.version",
    "review.decision",
    "review.link",
    "review.reminder",
    "review.deadline",
];

/// A notification type's name, as the document lists them (the request
/// carries them as strings: an unknown one is answered `422
/// invalid-field`, naming the types).
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub enum NoticeName {
    /// A comment set was stored or withdrawn.
    #[schema(rename = "review.comment")]
    Comment,
    /// A version was pushed.
    #[schema(rename = "review.version")]
    Version,
    /// A decision was made.
    #[schema(rename = "review.decision")]
    Decision,
    /// A link was minted or revoked.
    #[schema(rename = "review.link")]
    Link,
    /// The round is still undecided (to the deciders).
    #[schema(rename = "review.reminder")]
    Reminder,
    /// The deadline passed without a decision.
    #[schema(rename = "review.deadline")]
    Deadline,
}

/// `POST /api/v1/reviews/{id}/subscriptions` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateSubscriptionRequest {
    /// `webhook` (a JSON POST signed by the Standard Webhooks scheme) or
    /// `ntfy` (a plain-text POST with a title and a click URL, as ntfy
    /// takes it).
    #[cfg_attr(feature = "openapi", schema(pattern = "^(webhook|ntfy)$"))]
    pub kind: String,
    /// Where to deliver: an `https` URL (plain `http` and private, loopback
    /// or link-local addresses only where the tenant allows private
    /// targets), without user or password.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 2048))]
    pub url: String,
    /// The types wanted (default: all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(min_items = 1, value_type = Option<Vec<NoticeName>>)
    )]
    pub events: Option<Vec<String>>,
}

/// `POST /api/v1/reviews/{id}/subscriptions` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedSubscription {
    /// The subscription as listed.
    #[serde(flatten)]
    pub subscription: SubscriptionInfo,
    /// A webhook's signing secret (`whsec_…`), shown only here: verify each
    /// delivery's `webhook-signature` with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// One subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionInfo {
    /// `sub_` and 16 letters and digits.
    pub id: String,
    /// `webhook` or `ntfy`.
    pub kind: String,
    /// Where it delivers.
    pub url: String,
    /// The types it gets.
    pub events: Vec<String>,
    /// Who made it: `owner`, or the link id of a reviewer or approver.
    pub writer: String,
    /// Unix ms.
    pub created_at: u64,
    /// Set when the target said it is gone for good; nothing more is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<u64>,
}

/// `GET /api/v1/reviews/{id}/subscriptions` response: the caller's own
/// subscriptions, or all of the review's for its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubscriptionList {
    /// Oldest first.
    pub subscriptions: Vec<SubscriptionInfo>,
}

/// One attempt at a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptInfo {
    /// When it started, Unix ms.
    pub at: u64,
    /// The answer's status; absent when none came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it failed, in a few words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long it took, ms.
    pub ms: u64,
}

/// One notification of a subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryInfo {
    /// The message id, sent as `webhook-id` with every attempt.
    pub id: String,
    /// Its type (`review.comment`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// The review event it reports.
    pub seq: u64,
    /// When the event happened, Unix ms.
    pub created_at: u64,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    /// When the next attempt is due (pending only), Unix ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<u64>,
    /// Every attempt, first first.
    pub attempts: Vec<AttemptInfo>,
}

/// `GET /api/v1/reviews/{id}/subscriptions/{sid}/deliveries` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeliveryList {
    /// The newest 100, newest first.
    pub deliveries: Vec<DeliveryInfo>,
}

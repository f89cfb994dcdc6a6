//! Notifications in the catalog (migration 0012): a review's subscriptions,
//! the durable outbox of what is still to be delivered, every delivery
//! attempt, and the deployment's notification keys.
//!
//! The outbox is written by the review changes themselves: each one that
//! appends an event also inserts one outbox row per subscription that wants
//! it, in the same transaction (`reviews/queries.rs`, `append_event!`), so
//! an acknowledged write is never without its notification. The deliverer
//! (`paste-api`'s `notify` family) claims due rows, sends them, and records
//! each attempt here.
//!
//! This module sits below the families that feed it (only reviews do so
//! far): it knows events by their wire spelling, not by their types.
//!
//! A row's `data` is the notification's `data` object as JSON: ids,
//! numbers, names and the writer's sealed preview, never plan or comment
//! text; the catalog holds no notification secret (a webhook's signing
//! secret is derived from the `webhook` key and the subscription id).

use serde::Serialize;

use crate::CatalogError;

pub(crate) mod queries;

/// Most subscriptions one review may have.
pub const MAX_SUBSCRIPTIONS_PER_REVIEW: i64 = 200;

/// How long a claim on an outbox row lasts before another replica may take
/// it: longer than an attempt's timeout with room to record it.
pub const CLAIM_LEASE_MS: i64 = 60_000;

/// Where a subscription delivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// A signed JSON POST (Standard Webhooks).
    Webhook,
    /// A plain-text POST with a title and a click URL (ntfy and alike).
    Ntfy,
    /// A browser's push subscription (VAPID, RFC 8291).
    WebPush,
}

impl TargetKind {
    /// `webhook`, `ntfy` or `webpush`.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Webhook => "webhook",
            TargetKind::Ntfy => "ntfy",
            TargetKind::WebPush => "webpush",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "webhook" => TargetKind::Webhook,
            "ntfy" => TargetKind::Ntfy,
            "webpush" => TargetKind::WebPush,
            _ => return None,
        })
    }
}

/// The notification types, each a bit of a subscription's `events` mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoticeType {
    /// A comment set was stored or withdrawn.
    Comment,
    /// A version was pushed.
    Version,
    /// A decision was made.
    Decision,
    /// A link was minted or revoked.
    Link,
    /// No decision yet for this round: a reminder to the approvers.
    Reminder,
    /// The review's deadline passed without a decision.
    Deadline,
}

impl NoticeType {
    /// Every type, in bit order.
    pub const ALL: [NoticeType; 6] = [
        NoticeType::Comment,
        NoticeType::Version,
        NoticeType::Decision,
        NoticeType::Link,
        NoticeType::Reminder,
        NoticeType::Deadline,
    ];

    /// The mask of every type.
    pub const ALL_MASK: i64 = 0b11_1111;

    /// `review.comment`, `review.version`, …
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeType::Comment => "review.comment",
            NoticeType::Version => "review.version",
            NoticeType::Decision => "review.decision",
            NoticeType::Link => "review.link",
            NoticeType::Reminder => "review.reminder",
            NoticeType::Deadline => "review.deadline",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling.
    pub fn parse(s: &str) -> Option<Self> {
        NoticeType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// This type's bit.
    pub fn bit(self) -> i64 {
        1 << (self as u32)
    }

    /// The type a review event (by its wire spelling) is reported as;
    /// `closed` is not reported.
    pub fn of_event(kind: &str) -> Option<Self> {
        match kind {
            "comments" => Some(NoticeType::Comment),
            "version" => Some(NoticeType::Version),
            "decision" => Some(NoticeType::Decision),
            "links" | "revoked" => Some(NoticeType::Link),
            _ => None,
        }
    }

    /// The mask of `types`.
    pub fn mask(types: &[NoticeType]) -> i64 {
        types.iter().fold(0, |m, t| m | t.bit())
    }

    /// The types in `mask`, in bit order.
    pub fn of_mask(mask: i64) -> Vec<NoticeType> {
        NoticeType::ALL
            .into_iter()
            .filter(|t| mask & t.bit() != 0)
            .collect()
    }
}

/// Who made a change, as its notification names them: the writer it is
/// not sent to (a writer is not told of its own change), its role and
/// name, and the sealed preview its client attached.
#[derive(Clone, Copy, Debug)]
pub struct Actor<'a> {
    /// `owner` or a link id.
    pub writer: &'a str,
    /// Its role: `owner`, `reviewer` or `approver`.
    pub role: &'a str,
    /// Its bound name, when it has one.
    pub name: Option<&'a str>,
    /// The preview the writer's client encrypted under the review key
    /// (base64url), forwarded untouched.
    pub sealed: Option<&'a str>,
}

impl<'a> Actor<'a> {
    /// The owner, with no name and no preview (pushes, links).
    pub fn owner() -> Actor<'static> {
        Actor {
            writer: "owner",
            role: "owner",
            name: None,
            sealed: None,
        }
    }
}

/// A subscription as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    /// `sub_` and 16 letters and digits.
    pub id: String,
    /// The review.
    pub review: String,
    /// The writer that made it (`owner` or a link id).
    pub writer: String,
    /// Where it delivers.
    pub kind: TargetKind,
    /// The URL (webhook, ntfy) or the push subscription's JSON (webpush).
    pub target: String,
    /// The portal origin its notifications link to.
    pub link_base: String,
    /// The types it wants ([`NoticeType::bit`]s).
    pub events: i64,
    /// Unix ms.
    pub created_at: i64,
    /// When the target said it is gone (a push service's `410`).
    pub disabled_at: Option<i64>,
}

/// A subscription to add.
#[derive(Clone, Copy, Debug)]
pub struct NewSubscription<'a> {
    /// `sub_` and 16 letters and digits (the caller draws it).
    pub id: &'a str,
    /// The writer making it.
    pub writer: &'a str,
    /// Where it delivers.
    pub kind: TargetKind,
    /// The URL or the push subscription's JSON (at most 4 KiB).
    pub target: &'a str,
    /// The portal origin its notifications link to (at most 4 KiB).
    pub link_base: &'a str,
    /// The types it wants: not 0, within [`NoticeType::ALL_MASK`].
    pub events: i64,
    /// Unix ms.
    pub now: i64,
}

/// A delivery's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryState {
    /// Not yet delivered; retried while its day lasts.
    Pending,
    /// A `2xx` answered.
    Delivered,
    /// Retries ran out, or the target is gone.
    Failed,
}

impl DeliveryState {
    /// `pending`, `delivered` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Result<Self, CatalogError> {
        Ok(match s {
            "pending" => DeliveryState::Pending,
            "delivered" => DeliveryState::Delivered,
            "failed" => DeliveryState::Failed,
            other => {
                return Err(CatalogError::internal(format!(
                    "unknown delivery state {other:?}"
                )));
            }
        })
    }
}

/// One attempt at a delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first.
    pub n: i64,
    /// When it started, Unix ms.
    pub at: i64,
    /// The answer's status; `None` when none came (timeout, refused).
    pub status: Option<i64>,
    /// Why it failed, in a few words (never a secret or the answer's body).
    pub error: Option<String>,
    /// How long it took.
    pub ms: i64,
}

/// One notification of a subscription and its attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The outbox row.
    pub id: i64,
    /// The review event's seq (0 for a reminder or deadline).
    pub seq: i64,
    /// Its type.
    pub kind: NoticeType,
    /// When the event happened.
    pub created_at: i64,
    /// Where it stands.
    pub state: DeliveryState,
    /// When the next attempt is due (pending only).
    pub next_at: Option<i64>,
    /// Every attempt, first first.
    pub attempts: Vec<Attempt>,
}

/// A claimed outbox row with what sending it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxItem {
    /// The outbox row.
    pub id: i64,
    /// The tenant.
    pub tenant: crate::TenantId,
    /// The review.
    pub review: String,
    /// The subscription.
    pub subscription: String,
    /// Its target kind.
    pub kind: TargetKind,
    /// Its target.
    pub target: String,
    /// The portal origin to link to.
    pub link_base: String,
    /// The review event's seq.
    pub seq: i64,
    /// The notification type.
    pub notice: NoticeType,
    /// The notification's `data` object, JSON.
    pub data: String,
    /// When the event happened, Unix ms.
    pub created_at: i64,
    /// Attempts so far.
    pub attempts: i64,
}

/// What an attempt came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptEnd {
    /// Delivered.
    Delivered,
    /// Try again at this time (Unix ms).
    RetryAt(i64),
    /// Give up: retries ran out.
    GiveUp,
    /// The target is gone for good: give up and disable the subscription.
    Gone,
}

/// The notification's `data` object of a review event, and its type;
/// `None` for an event that is not reported.
pub(crate) fn notice_of_event(
    review: &str,
    seq: i64,
    kind: &'static str,
    event_data: &str,
    actor: &Actor<'_>,
) -> Result<Option<(NoticeType, String)>, CatalogError> {
    let Some(notice) = NoticeType::of_event(kind) else {
        return Ok(None);
    };
    let event: serde_json::Value = serde_json::from_str(event_data)
        .map_err(|e| CatalogError::internal(format!("a review event's data is not JSON: {e}")))?;
    let int = |k: &str| event.get(k).and_then(serde_json::Value::as_i64);
    let name = actor.name.or_else(|| match kind {
        "comments" => event.get("name").and_then(|n| n.as_str()),
        "decision" => event.pointer("/by/name").and_then(|n| n.as_str()),
        _ => None,
    });
    let data = NoticeData {
        review,
        seq,
        kind,
        round: int("round"),
        version: match kind {
            "version" => int("n"),
            _ => int("version"),
        },
        decision: event.get("decision").and_then(|d| d.as_str()),
        withdrawn: event
            .get("withdrawn")
            .and_then(serde_json::Value::as_bool)
            .filter(|w| *w),
        writer: Some(WriterData {
            role: actor.role,
            name,
        }),
        sealed: actor.sealed,
    };
    Ok(Some((notice, encode(&data)?)))
}

/// The `data` object of a reminder (`deadline` `None`) or a deadline
/// notice.
pub(crate) fn notice_of_time(
    review: &str,
    round: i64,
    version: i64,
    deadline: Option<i64>,
) -> Result<String, CatalogError> {
    #[derive(Serialize)]
    struct TimeData<'a> {
        review: &'a str,
        seq: i64,
        kind: &'static str,
        round: i64,
        version: i64,
        #[serde(skip_serializing_if = "Option::is_none")]
        deadline: Option<i64>,
    }
    encode(&TimeData {
        review,
        seq: 0,
        kind: if deadline.is_some() {
            "deadline"
        } else {
            "reminder"
        },
        round,
        version,
        deadline,
    })
}

#[derive(Serialize)]
struct NoticeData<'a> {
    review: &'a str,
    seq: i64,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    round: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    withdrawn: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    writer: Option<WriterData<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sealed: Option<&'a str>,
}

#[derive(Serialize)]
struct WriterData<'a> {
    role: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

fn encode(data: &impl Serialize) -> Result<String, CatalogError> {
    serde_json::to_string(data).map_err(|e| CatalogError::Internal {
        reason: "cannot encode a notification as JSON".into(),
        source: Some(Box::new(e)),
    })
}

/// `sub_` and 16 ASCII letters and digits.
pub fn is_subscription_id(s: &str) -> bool {
    s.len() == 20 && s.starts_with("sub_") && s.bytes().skip(4).all(|b| b.is_ascii_alphanumeric())
}

/// Most bytes of a stored target.
pub const MAX_TARGET_BYTES: usize = 4096;

/// Most bytes of a sealed preview (base64url of a short ciphertext).
pub const MAX_SEALED_BYTES: usize = 1024;

fn check_new(new: &NewSubscription<'_>) -> Result<(), CatalogError> {
    if !is_subscription_id(new.id) {
        return Err(CatalogError::Invalid(
            "a subscription id is `sub_` and 16 letters and digits".into(),
        ));
    }
    if new.target.is_empty() || new.target.len() > MAX_TARGET_BYTES {
        return Err(CatalogError::Invalid(format!(
            "a subscription's target must be 1-{MAX_TARGET_BYTES} bytes"
        )));
    }
    if new.link_base.len() > MAX_TARGET_BYTES {
        return Err(CatalogError::Invalid(format!(
            "a subscription's link base must be at most {MAX_TARGET_BYTES} bytes"
        )));
    }
    if new.events <= 0 || new.events & !NoticeType::ALL_MASK != 0 {
        return Err(CatalogError::Invalid(
            "a subscription wants at least one known notification type".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notice_types_are_bits_and_names() {
        assert_eq!(NoticeType::mask(&NoticeType::ALL), NoticeType::ALL_MASK);
        for t in NoticeType::ALL {
            assert_eq!(NoticeType::parse(t.as_str()), Some(t));
            assert_eq!(NoticeType::of_mask(t.bit()), vec![t]);
        }
        assert_eq!(NoticeType::parse("review.nothing"), None);
    }

    #[test]
    fn a_comment_event_becomes_a_notice_without_content() {
        let actor = Actor {
            writer: "abcdefgh1234",
            role: "approver",
            name: Some("Dana"),
            sealed: Some("c2VhbGVk"),
        };
        let (t, data) = notice_of_event(
            "rev123",
            7,
            "comments",
            r#"{"writer":"abcdefgh1234","name":"Dana","version":2,"withdrawn":false}"#,
            &actor,
        )
        .unwrap()
        .unwrap();
        assert_eq!(t, NoticeType::Comment);
        assert_eq!(
            data,
            r#"{"review":"rev123","seq":7,"kind":"comments","version":2,"writer":{"role":"approver","name":"Dana"},"sealed":"c2VhbGVk"}"#
        );
        let (t, data) = notice_of_event(
            "rev123",
            8,
            "version",
            r#"{"n":3,"round":2,"reopened":true}"#,
            &Actor::owner(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(t, NoticeType::Version);
        assert_eq!(
            data,
            r#"{"review":"rev123","seq":8,"kind":"version","round":2,"version":3,"writer":{"role":"owner"}}"#
        );
        assert!(
            notice_of_event("r", 1, "closed", "{}", &Actor::owner())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn subscription_ids_are_checked() {
        assert!(is_subscription_id("sub_abcdefgh12345678"));
        for bad in ["sub_abc", "xub_abcdefgh12345678", "sub_abcdefgh1234567-"] {
            assert!(!is_subscription_id(bad), "{bad}");
        }
    }
}

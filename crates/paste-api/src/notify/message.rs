//! What a delivery sends: a webhook's JSON body and an ntfy-style push.
//! Both are made from the outbox row alone (ids, numbers, names and the
//! sealed preview; never plan or comment text), so every attempt of one
//! notification sends the same body.

use serde_json::{Map, Value};
use tenancy::{NoticeType, OutboxItem};

/// The message id of a notification (`webhook-id`): the same for every
/// attempt, unique per review event and subscription.
pub(crate) fn message_id(item: &OutboxItem) -> String {
    message_id_of(&item.review, item.seq, &item.subscription, item.id)
}

/// [`message_id`] from its parts: a review event's by its `seq`; a
/// reminder's or a deadline's (`seq` 0) by its outbox row.
pub(crate) fn message_id_of(review: &str, seq: i64, subscription: &str, row: i64) -> String {
    if seq > 0 {
        format!("msg_{review}_{seq}_{subscription}")
    } else {
        format!("msg_{review}_t{row}_{subscription}")
    }
}

/// The review's address without key or token: `<base>/r/<id>`, where a
/// browser that opened the review before finds its key.
pub(crate) fn review_url(base: &str, review: &str) -> String {
    format!("{}/r/{review}", base.trim_end_matches('/'))
}

/// The webhook body: `{"type","timestamp","data":{…, "url"}}`.
pub(crate) fn webhook_body(item: &OutboxItem, url: &str) -> Vec<u8> {
    let mut data: Map<String, Value> = serde_json::from_str(&item.data).unwrap_or_default();
    data.insert("url".into(), Value::String(url.to_owned()));
    let body = serde_json::json!({
        "type": item.notice.as_str(),
        "timestamp": rfc3339(item.created_at),
        "data": data,
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// An ntfy-style push: a title (ASCII, it travels as a header) and a line
/// of text that says what happened and who did it, never what was written.
pub(crate) fn ntfy_text(item: &OutboxItem) -> (String, String) {
    let data: Value = serde_json::from_str(&item.data).unwrap_or_default();
    let num = |k: &str| data.get(k).and_then(Value::as_i64);
    let who = data
        .pointer("/writer/name")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            data.pointer("/writer/role")
                .and_then(Value::as_str)
                .map(|r| format!("the {r}"))
        })
        .unwrap_or_else(|| "someone".into());
    let on = num("version")
        .map(|v| format!(" on v{v}"))
        .unwrap_or_default();
    let text = match item.notice {
        NoticeType::Comment if data.get("withdrawn").is_some() => {
            format!("{who} withdrew their comments{on}")
        }
        NoticeType::Comment => format!("{who} commented{on}"),
        NoticeType::Version => {
            let round = num("round")
                .map(|r| format!(" (round {r})"))
                .unwrap_or_default();
            format!("v{} was pushed{round}", num("version").unwrap_or(0))
        }
        NoticeType::Decision => match data.get("decision").and_then(Value::as_str) {
            Some("approved") => format!("{who} approved{on}"),
            _ => format!("{who} requested changes{on}"),
        },
        NoticeType::Link => "The review's links changed".into(),
        NoticeType::Reminder => format!("A decision is still due{on}"),
        NoticeType::Deadline => format!("The deadline passed without a decision{on}"),
    };
    (format!("planshare review {}", item.review), text)
}

/// Unix ms as an RFC 3339 UTC time with milliseconds.
pub(crate) fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenancy::{TargetKind, TenantId};

    fn item(notice: NoticeType, data: &str) -> OutboxItem {
        OutboxItem {
            id: 1,
            tenant: TenantId::default_tenant(),
            review: "rev123".into(),
            subscription: "sub_aaaaaaaaaaaaaaaa".into(),
            kind: TargetKind::Webhook,
            target: "https://example.com".into(),
            link_base: "https://p.example".into(),
            seq: 4,
            notice,
            data: data.into(),
            created_at: 1_765_152_000_123,
            attempts: 0,
        }
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_765_152_000_123), "2025-12-08T00:00:00.123Z");
    }

    #[test]
    fn the_webhook_body_is_the_row_with_the_link() {
        let i = item(
            NoticeType::Comment,
            r#"{"review":"rev123","seq":4,"kind":"comments","version":2,"writer":{"role":"reviewer","name":"Dana"},"sealed":"abc"}"#,
        );
        let body: Value =
            serde_json::from_slice(&webhook_body(&i, "https://p.example/r/rev123")).unwrap();
        assert_eq!(body["type"], "review.comment");
        assert_eq!(body["timestamp"], "2025-12-08T00:00:00.123Z");
        assert_eq!(body["data"]["sealed"], "abc");
        assert_eq!(body["data"]["url"], "https://p.example/r/rev123");
        assert_eq!(message_id(&i), "msg_rev123_4_sub_aaaaaaaaaaaaaaaa");
        assert_eq!(
            review_url("https://p.example/", "rev123"),
            "https://p.example/r/rev123"
        );
    }

    #[test]
    fn ntfy_says_who_did_what_without_content() {
        let (title, text) = ntfy_text(&item(
            NoticeType::Decision,
            r#"{"decision":"changes_requested","version":3,"writer":{"role":"approver","name":"Dana"}}"#,
        ));
        assert_eq!(title, "planshare review rev123");
        assert_eq!(text, "Dana requested changes on v3");
        let (_, text) = ntfy_text(&item(
            NoticeType::Version,
            r#"{"version":4,"round":2,"writer":{"role":"owner"}}"#,
        ));
        assert_eq!(text, "v4 was pushed (round 2)");
    }
}

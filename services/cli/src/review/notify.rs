//! `planshare review notify`: where a writer of a review hears of its
//! changes. A subscription belongs to the link that made it (the owner
//! sees and removes all of a review's); the server delivers, signs webhooks
//! by the Standard Webhooks scheme, and sends no plan or comment text —
//! only who did what, and a preview sealed under the review key.

use api_types::notify::{CreateSubscriptionRequest, DeliveryInfo, SubscriptionInfo};
use clap::Args;

use super::{ApiArgs, Linked};
use crate::env::Env;
use crate::error::CliError;
use crate::terminal::{json_line, safe_text};

/// Arguments of `review notify`.
#[derive(Args)]
#[command(group(clap::ArgGroup::new("what").args(["webhook", "ntfy", "list", "remove", "deliveries"]).required(true)))]
pub struct NotifyArgs {
    /// The review: its id in your keyring, a link, or `-` (a link on stdin).
    link: String,
    /// Subscribe a webhook: signed JSON POSTs (Standard Webhooks); prints
    /// the signing secret once.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    /// Subscribe an ntfy topic (or anything that takes a plain-text POST
    /// with `Title` and `Click` headers).
    #[arg(long, value_name = "URL")]
    ntfy: Option<String>,
    /// With `--webhook`/`--ntfy`: only these types, comma-separated
    /// (`comment`, `version`, `decision`, `link`, `reminder`, `deadline`,
    /// with or without `review.`) [default: all].
    #[arg(long, value_delimiter = ',', value_name = "TYPES")]
    events: Vec<String>,
    /// List this link's subscriptions (the owner's: all of the review's).
    #[arg(long)]
    list: bool,
    /// Remove a subscription by id (`sub_…`).
    #[arg(long, value_name = "ID")]
    remove: Option<String>,
    /// Show what was delivered to a subscription, newest first.
    #[arg(long, value_name = "ID")]
    deliveries: Option<String>,
    /// Print the server's answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    api: ApiArgs,
}

/// Runs `review notify`; returns what to print on stdout.
pub async fn run(args: NotifyArgs, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    let api = &linked.api;
    if let Some(sid) = &args.remove {
        check_id(sid)?;
        api.unsubscribe(&linked.id, &linked.token, sid).await?;
        return Ok(format!("removed {sid}\n"));
    }
    if let Some(sid) = &args.deliveries {
        check_id(sid)?;
        let list = api.deliveries(&linked.id, &linked.token, sid).await?;
        if args.json {
            return json_line(&list);
        }
        if list.deliveries.is_empty() {
            return Ok("nothing delivered yet\n".into());
        }
        return Ok(list.deliveries.iter().map(delivery_line).collect());
    }
    if args.list {
        let list = api.subscriptions(&linked.id, &linked.token).await?;
        if args.json {
            return json_line(&list);
        }
        if list.subscriptions.is_empty() {
            return Ok("no subscriptions\n".into());
        }
        return Ok(list.subscriptions.iter().map(subscription_line).collect());
    }
    let (kind, url) = match (&args.webhook, &args.ntfy) {
        (Some(url), None) => ("webhook", url),
        (None, Some(url)) => ("ntfy", url),
        _ => {
            return Err(CliError::Usage(
                "give one of --webhook URL or --ntfy URL".into(),
            ));
        }
    };
    let events =
        (!args.events.is_empty()).then(|| args.events.iter().map(|e| event_name(e)).collect());
    let made = api
        .subscribe(
            &linked.id,
            &linked.token,
            &CreateSubscriptionRequest {
                kind: kind.into(),
                url: url.clone(),
                events,
            },
        )
        .await?;
    if args.json {
        return json_line(&made);
    }
    let mut out = format!("subscribed {}", subscription_line(&made.subscription));
    if let Some(secret) = &made.secret {
        out.push_str(&format!(
            "secret {secret}\n(shown once: verify each delivery's webhook-signature with it, as any Standard Webhooks library does)\n"
        ));
    }
    Ok(out)
}

/// `comment` → `review.comment`; a full name stays as it is.
fn event_name(e: &str) -> String {
    let e = e.trim();
    if e.starts_with("review.") {
        e.to_owned()
    } else {
        format!("review.{e}")
    }
}

fn check_id(sid: &str) -> Result<(), CliError> {
    if sid.len() == 20
        && sid.starts_with("sub_")
        && sid.bytes().skip(4).all(|b| b.is_ascii_alphanumeric())
    {
        Ok(())
    } else {
        Err(CliError::Usage(
            "a subscription id is sub_ and 16 letters or digits, as `review notify --list` shows"
                .into(),
        ))
    }
}

fn subscription_line(s: &SubscriptionInfo) -> String {
    let all = s.events.len() == api_types::notify::NOTICE_TYPES.len();
    let events = if all {
        "all events".to_owned()
    } else {
        s.events
            .iter()
            .map(|e| e.trim_start_matches("review."))
            .collect::<Vec<_>>()
            .join(",")
    };
    let off = if s.disabled_at.is_some() {
        "  (ended: the target said it is gone)"
    } else {
        ""
    };
    format!(
        "{}  {}  {}  {}  by {}{off}\n",
        safe_text(&s.id),
        safe_text(&s.kind),
        safe_text(&s.url),
        safe_text(&events),
        safe_text(&s.writer)
    )
}

fn delivery_line(d: &DeliveryInfo) -> String {
    let attempts: Vec<String> = d
        .attempts
        .iter()
        .map(|a| match (a.status, &a.error) {
            (Some(status), _) => status.to_string(),
            (None, Some(error)) => safe_text(error).into_owned(),
            (None, None) => "?".into(),
        })
        .collect();
    format!(
        "{}  {}  {}  attempts: {}\n",
        safe_text(&d.id),
        safe_text(&d.kind),
        safe_text(&d.state),
        if attempts.is_empty() {
            "none yet".into()
        } else {
            attempts.join(", ")
        }
    )
}

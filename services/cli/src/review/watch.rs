//! `planshare review watch LINK`: follows a review's event stream (SSE)
//! until the owner decides.
//!
//! - One line per event on stderr ("alice commented on v2 (3 annotations)",
//!   "v3 pushed", "link added", "bob's link was revoked", "approved"…), or
//!   with `--json` each event as one JSON line `{"id","event","data"}` on
//!   stdout.
//! - On the decision: the feedback export (every writer's comments
//!   re-anchored on the latest version, each naming its writer, the
//!   decision first, see `export.rs`) on stdout
//!   (with `--json`: as `"feedback"` of the decision's line); exit 0 for
//!   `approved`, 15 for `changes_requested`.
//! - Before waiting, the link is checked: a review that refuses its token
//!   (mistyped, revoked, or the review is gone) exits 6; a key that does
//!   not open the latest version (a damaged link) exits 5.
//! - Exit 16: the review was deleted or expired, or this link was revoked,
//!   while watching.
//! - Exit 11: an event larger than [`MAX_EVENT_BYTES`] (the API is not a
//!   planshare server); it is not buffered, and not reconnected to.
//! - A dropped stream or a restarted server: reconnects with
//!   `Last-Event-ID` (0.5 s doubling to 10 s, until interrupted), skipping
//!   any event at or below the last id seen; a review that answers 404
//!   then is gone (exit 16).

use std::collections::HashMap;
use std::io::Write as _;
use std::time::Duration;

use api_types::reviews as wire;
use clap::Args;
use serde_json::{Value, json};

use super::sse::{MAX_EVENT_BYTES, SseEvent, SseParser};
use super::{Checked, Linked, count_annotations, export, merged};
use crate::client::printable;
use crate::env::Env;
use crate::error::CliError;
use crate::paste::ApiArgs;
use crate::terminal::{json_line, safe_text};

/// Arguments of `review watch`.
#[derive(Args)]
pub struct WatchArgs {
    /// The owner link or a reviewer link.
    link: String,
    /// Print each event as one JSON line on stdout instead of text on stderr.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    api: ApiArgs,
}

/// Arguments of `review wait`.
#[derive(Args)]
pub struct WaitArgs {
    /// A link of the review, its id in the keyring, or `-` (a link on
    /// standard input).
    link: String,
    /// Give up after this long (`30m`, `4h`, `90s` or seconds): exit 17,
    /// the review untouched. Default: wait until the round is decided.
    #[arg(long, value_parser = super::parse_duration)]
    timeout: Option<u64>,
    #[command(flatten)]
    api: ApiArgs,
}

const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// How watching ended.
enum End {
    /// The owner decided (`id`: the decision event's, when it came as one).
    Decided {
        decision: wire::DecisionInfo,
        view: Option<Box<wire::ReviewView>>,
        id: Option<u64>,
    },
    Closed(String),
}

struct Watcher {
    linked: Linked,
    json: bool,
    /// The caller's own writer id (`owner` or its link id).
    me: String,
    /// Link id → bound name, as far as known.
    names: HashMap<String, String>,
    last: u64,
    /// `wait`: no event lines.
    quiet: bool,
}

/// Runs `watch`; the feedback is written here, so this returns nothing to
/// print (or the exit-code-carrying error).
pub async fn run(args: WatchArgs, env: &Env) -> Result<String, CliError> {
    follow_review(&args.link, &args.api, args.json, None, env).await
}

/// Runs `wait`: `watch` without the event lines, for scripts, up to
/// `--timeout` (exit 17 when it runs out).
pub async fn wait(args: WaitArgs, env: &Env) -> Result<String, CliError> {
    let timeout = args.timeout.map(Duration::from_secs);
    follow_review(&args.link, &args.api, false, timeout, env).await
}

/// Follows the review of `link` until its round is decided (or `timeout`,
/// when given, runs out); the event lines only without `timeout`.
async fn follow_review(
    link: &str,
    api: &ApiArgs,
    json: bool,
    timeout: Option<Duration>,
    env: &Env,
) -> Result<String, CliError> {
    let linked = Linked::from_link(link, api, env)?;
    // The link is checked before anything is waited for: its token (a
    // refusal: exit 6) and its key (a plan it does not open: exit 5).
    let Checked { view, .. } = linked.check(true).await?;
    let mut watcher = Watcher {
        me: view.you.link.clone(),
        names: HashMap::new(),
        last: view.seq,
        json,
        linked,
        quiet: timeout.is_some(),
    };
    watcher.learn(&view);
    let end = match view.decision.clone() {
        Some(decision) => End::Decided {
            decision,
            view: Some(Box::new(view)),
            id: None,
        },
        None => {
            let sets = view.comments.len();
            let open = super::threads::of_view(&watcher.linked, &view)
                .iter()
                .filter(|t| t.state == "open")
                .count();
            let round = if view.round > 1 {
                format!(" (round {})", view.round)
            } else {
                String::new()
            };
            watcher.say(&format!(
                "watching review {}: v{}{round}, {sets} comment set{}, {open} open thread{}",
                safe_text(&view.id),
                view.latest,
                if sets == 1 { "" } else { "s" },
                if open == 1 { "" } else { "s" }
            ));
            if let Some(last) = view.decisions.last() {
                let what = if last.decision == "approved" {
                    "approved"
                } else {
                    "changes requested"
                };
                let voided = last
                    .voided_by
                    .map(|n| format!(", voided by v{n}"))
                    .unwrap_or_default();
                watcher.say(&format!(
                    "round {}: {what} on v{} by {}{voided}",
                    last.round,
                    last.version,
                    safe_text(&super::decider_label(&view, last))
                ));
            }
            let (limit, by_deadline) = wait_limit(timeout, &view);
            match limit {
                None => watcher.follow().await?,
                Some(limit) => match tokio::time::timeout(limit, watcher.follow()).await {
                    Ok(end) => end?,
                    Err(_) if by_deadline => {
                        return Err(CliError::TimedOut(format!(
                            "the deadline of review {} passed without a decision; the review stays open: the owner can set a new one with `planshare review deadline {} 4h`",
                            safe_text(&view.id),
                            safe_text(&view.id)
                        )));
                    }
                    Err(_) => {
                        return Err(CliError::TimedOut(format!(
                            "no decision on review {} within {}s; the review stays as it is: wait again with `planshare review wait {}`",
                            safe_text(&view.id),
                            limit.as_secs(),
                            safe_text(&view.id)
                        )));
                    }
                },
            }
        }
    };
    match end {
        End::Closed(why) => Err(CliError::ReviewClosed(why)),
        End::Decided { decision, view, id } => watcher.finish(&decision, view, id).await,
    }
}

/// How [`await_decision`] ended.
pub enum Awaited {
    /// This round was decided: the decision and the feedback export.
    Decided {
        decision: wire::DecisionInfo,
        feedback: String,
    },
    /// The review is gone, or the link was revoked (why).
    Closed(String),
    /// No decision within the time given; the review is untouched.
    Open,
    /// The review's deadline passed without a decision (Unix ms); the
    /// review stays open.
    Deadline(u64),
}

/// How long until the review's deadline (zero once it passed); `None`
/// without one.
pub(crate) fn until_deadline(view: &wire::ReviewView) -> Option<Duration> {
    view.deadline
        .map(|d| Duration::from_millis(d.saturating_sub(super::now_ms())))
}

/// The shorter of a caller's limit and the time to the deadline, and
/// whether the deadline is what ends it.
fn wait_limit(limit: Option<Duration>, view: &wire::ReviewView) -> (Option<Duration>, bool) {
    match (limit, until_deadline(view)) {
        (Some(l), Some(d)) if d <= l => (Some(d), true),
        (None, Some(d)) => (Some(d), true),
        (l, _) => (l, false),
    }
}

/// Waits up to `limit` for the decision of the review's current round
/// (at once when it is decided already), without a word on stderr: the
/// hook's and MCP's wait.
pub async fn await_decision(linked: Linked, limit: Duration) -> Result<Awaited, CliError> {
    let view = linked.view().await.map_err(gone)?;
    let mut watcher = Watcher {
        me: view.you.link.clone(),
        names: HashMap::new(),
        last: view.seq,
        json: false,
        linked,
        quiet: true,
    };
    let (limit, by_deadline) = wait_limit(Some(limit), &view);
    let limit = limit.unwrap_or_default();
    let deadline = view.deadline.unwrap_or_default();
    let (decision, view) = match view.decision.clone() {
        Some(decision) => (decision, view),
        None => match tokio::time::timeout(limit, watcher.follow()).await {
            Err(_) if by_deadline => return Ok(Awaited::Deadline(deadline)),
            Err(_) => return Ok(Awaited::Open),
            Ok(Err(CliError::ReviewClosed(why))) => return Ok(Awaited::Closed(why)),
            Ok(Err(other)) => return Err(other),
            Ok(Ok(End::Closed(why))) => return Ok(Awaited::Closed(why)),
            Ok(Ok(End::Decided { decision, view, .. })) => match view {
                Some(view) => (decision, *view),
                None => (decision, watcher.linked.view().await.map_err(gone)?),
            },
        },
    };
    let feedback = watcher.feedback(&view).await?;
    Ok(Awaited::Decided { decision, feedback })
}

/// A review that no longer answers this link, in `watch`'s terms (exit 16).
fn gone(error: CliError) -> CliError {
    match error {
        CliError::ReviewNotFound => CliError::ReviewClosed(
            "the review is gone (deleted or expired) or this link was revoked".into(),
        ),
        other => other,
    }
}

impl Watcher {
    fn learn(&mut self, view: &wire::ReviewView) {
        for link in view.links.iter().flatten() {
            if let Some(name) = &link.name {
                self.names.insert(link.id.clone(), name.clone());
            }
        }
        for set in &view.comments {
            self.names.insert(set.writer.clone(), set.name.clone());
        }
    }

    /// Follows the stream, reconnecting as needed, until the decision or
    /// the end of the review.
    async fn follow(&mut self) -> Result<End, CliError> {
        let mut backoff = FIRST_BACKOFF;
        let mut reported_outage = false;
        loop {
            let opened = self
                .linked
                .api
                .events(&self.linked.id, &self.linked.token, self.last)
                .await;
            match opened {
                Ok(Ok(mut response)) => {
                    backoff = FIRST_BACKOFF;
                    if reported_outage {
                        super::warn("reconnected");
                        reported_outage = false;
                    }
                    let mut parser = SseParser::new();
                    while let Ok(Some(chunk)) = response.chunk().await {
                        for event in parser.feed(&chunk) {
                            if let Some(end) = self.handle(event).await? {
                                return Ok(end);
                            }
                        }
                        if parser.too_large() {
                            return Err(self.event_too_large());
                        }
                    }
                    // The stream ended (server shutdown, a proxy, the
                    // network): reconnect from the last id.
                    if parser
                        .last_comment()
                        .is_some_and(|c| c.contains("reconnect"))
                    {
                        super::warn("the server is restarting; reconnecting");
                        reported_outage = true;
                    }
                }
                Ok(Err(CliError::ReviewNotFound)) => return Err(gone(CliError::ReviewNotFound)),
                Ok(Err(CliError::Unavailable(_))) | Err(CliError::Unavailable(_)) => {}
                Ok(Err(other)) | Err(other) => return Err(other),
            }
            if !reported_outage {
                super::warn("the event stream was interrupted; reconnecting");
                reported_outage = true;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// The error for a stream whose event passed [`MAX_EVENT_BYTES`]: not
    /// a planshare server (or not one any more), so not worth a reconnect.
    fn event_too_large(&self) -> CliError {
        CliError::Service(format!(
            "the review API at {} sent an event larger than {} MiB, where a planshare server's are a few hundred bytes; is it a planshare server? (the API is --paste-url, else the link's &paste=, else the link's origin)",
            printable(self.linked.api.base()),
            MAX_EVENT_BYTES / (1024 * 1024)
        ))
    }

    /// Acts on one event; `Some` when watching is over.
    async fn handle(&mut self, event: SseEvent) -> Result<Option<End>, CliError> {
        let id = event
            .id
            .as_deref()
            .and_then(|id| id.trim().parse::<u64>().ok());
        if let Some(id) = id {
            if id <= self.last {
                return Ok(None);
            }
            self.last = id;
        }
        let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
        let text = |key: &str| {
            data.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let number = |key: &str| data.get(key).and_then(Value::as_u64).unwrap_or(0);
        if self.json && event.event != "decision" {
            self.json_line(id, &event.event, &data, None)?;
        }
        match event.event.as_str() {
            "version" => {
                let flag = |key: &str| data.get(key).and_then(Value::as_bool) == Some(true);
                let what = if flag("voided") {
                    format!(", round {}: the approval is void", number("round"))
                } else if flag("reopened") {
                    format!(", round {}", number("round"))
                } else if flag("progress") {
                    " (progress)".to_owned()
                } else {
                    String::new()
                };
                self.say(&format!("v{} pushed{what}", number("n")));
            }
            "links" => self.say(&format!("link {} added", safe_text(&text("link")))),
            "comments" => {
                let (writer, name) = (text("writer"), text("name"));
                self.names.insert(writer.clone(), name.clone());
                let name = safe_text(&name).into_owned();
                if data.get("withdrawn").and_then(Value::as_bool) == Some(true) {
                    self.say(&format!("{name} withdrew their comments"));
                } else if !self.json {
                    let count = self.count(&writer).await?;
                    self.say(&format!(
                        "{name} commented on v{}{count}",
                        number("version")
                    ));
                }
            }
            "revoked" => {
                let link = text("link");
                if link == self.me {
                    return Ok(Some(End::Closed(
                        "this link was revoked by the review's owner".into(),
                    )));
                }
                match self.names.get(&link) {
                    Some(name) => self.say(&format!("{}'s link was revoked", safe_text(name))),
                    None => self.say(&format!("link {} was revoked", safe_text(&link))),
                }
            }
            "decision" => {
                let view = self.linked.view().await.map_err(gone)?;
                // The decision of the event's round (a push may have
                // opened the next round since).
                let round = number("round");
                let by = data.get("by");
                let by_text = |key: &str| {
                    by.and_then(|b| b.get(key))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                let decision = view
                    .decisions
                    .iter()
                    .rev()
                    .find(|d| d.round == round)
                    .or(view.decision.as_ref())
                    .cloned()
                    .unwrap_or(wire::DecisionInfo {
                        round,
                        version: number("version"),
                        digest: String::new(),
                        decision: text("decision"),
                        by: wire::DecidedBy {
                            role: by_text("role").unwrap_or_default(),
                            link: by_text("link").unwrap_or_default(),
                            name: by_text("name"),
                        },
                        data: None,
                        decided_at: 0,
                        voided_by: None,
                    });
                return Ok(Some(End::Decided {
                    decision,
                    view: Some(Box::new(view)),
                    id,
                }));
            }
            "closed" => {
                let reason = match text("reason").as_str() {
                    "deleted" => "deleted",
                    "expired" => "expired",
                    _ => "closed",
                };
                return Ok(Some(End::Closed(format!("the review was {reason}"))));
            }
            _ => {}
        }
        Ok(None)
    }

    /// " (3 annotations)" for `writer`'s current set, from a fresh read.
    async fn count(&mut self, writer: &str) -> Result<String, CliError> {
        let view = self.linked.view().await.map_err(gone)?;
        self.learn(&view);
        let set = view.comments.iter().find(|c| c.writer == writer);
        Ok(
            match set.map(|s| count_annotations(&self.linked.key, &s.data)) {
                Some(Ok(1)) => " (1 annotation)".to_owned(),
                Some(Ok(n)) => format!(" ({n} annotations)"),
                Some(Err(_)) => " (comments that do not decrypt)".to_owned(),
                None => String::new(),
            },
        )
    }

    fn say(&self, line: &str) {
        if !self.json && !self.quiet {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    }

    fn json_line(
        &self,
        id: Option<u64>,
        kind: &str,
        data: &Value,
        feedback: Option<&str>,
    ) -> Result<(), CliError> {
        let mut line = json!({ "id": id, "event": kind, "data": data });
        if let Some(feedback) = feedback {
            line["feedback"] = Value::String(feedback.to_owned());
        }
        let line = json_line(&line)?;
        let mut out = std::io::stdout().lock();
        out.write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| CliError::Output(e.to_string()))
    }

    async fn feedback(&self, view: &wire::ReviewView) -> Result<String, CliError> {
        let merged = merged(&self.linked, view, None).await?;
        Ok(export::feedback(&merged))
    }

    /// Prints the decision and the feedback; the exit status.
    async fn finish(
        &self,
        decision: &wire::DecisionInfo,
        view: Option<Box<wire::ReviewView>>,
        id: Option<u64>,
    ) -> Result<String, CliError> {
        let approved = decision.decision == "approved";
        let view = match view {
            Some(view) => *view,
            None => self.linked.view().await.map_err(gone)?,
        };
        let feedback = self.feedback(&view).await?;
        if self.json {
            let data = json!({ "decision": decision.decision });
            self.json_line(id, "decision", &data, Some(&feedback))?;
        } else {
            let by = super::decider_label(&view, decision);
            self.say(&safe_text(&if approved {
                format!(
                    "round {}: v{} approved by {by}",
                    decision.round, decision.version
                )
            } else {
                format!(
                    "round {}: changes requested on v{} by {by}",
                    decision.round, decision.version
                )
            }));
            let mut out = std::io::stdout().lock();
            out.write_all(feedback.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| CliError::Output(e.to_string()))?;
        }
        if approved {
            Ok(String::new())
        } else {
            Err(CliError::ChangesRequested)
        }
    }
}

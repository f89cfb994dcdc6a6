//! `planshare hook claude-code`: Claude Code's `PermissionRequest` hook
//! for `ExitPlanMode`, so that the plan an agent proposes is approved by a
//! person anywhere, through a review link, instead of at the agent's own
//! terminal.
//!
//! The contract with Claude Code:
//! - stdin holds one JSON object: `session_id`, `cwd`, `hook_event_name`,
//!   `tool_name`, `tool_input` (`plan` for `ExitPlanMode`).
//! - For `ExitPlanMode`, stdout gets exactly one JSON object,
//!   `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`
//!   or the same with `"behavior":"deny","message":…`, where the message is
//!   what the agent reads next: the feedback export on changes requested,
//!   or how to go on when no decision came in time.
//! - Any other tool: nothing on stdout, exit 0 (Claude Code's own prompt
//!   goes on).
//! - Input that does not read, or a service that cannot be reached: a
//!   message on stderr, nothing on stdout, a non-zero exit. Claude Code
//!   then asks at its own prompt: a failure never allows anything.
//!
//! One review per Claude Code session: its keyring entry names the
//! session, so the second plan of a session (the hook run again, or after a
//! restart) is pushed as the next version of the same review, and the
//! people keep their links. The owner link stays in the keyring; only the
//! links for people are shown (on the terminal and on stderr).

use std::io::{Read as _, Write as _};
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use share_codec::SharePayload;

use crate::env::Env;
use crate::error::CliError;
use crate::paste::ApiArgs;
use crate::review::keyring::{self, Entry};
use crate::review::watch::{Awaited, await_decision};
use crate::review::{
    Checked, Linked, NewReview, create_review, keep_new, parse_duration, push_payload, warn,
};
use crate::terminal::safe_text;

/// The largest hook input read (a plan is limited far below this by the
/// server; this only bounds memory).
const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Hooks for coding agents.
#[derive(Subcommand)]
pub enum HookCommand {
    /// Claude Code's PermissionRequest hook for ExitPlanMode: the plan goes
    /// to a review (one per session; each new plan a new version), the
    /// approver's decision comes back as allow or deny with the feedback.
    ClaudeCode(ClaudeCodeArgs),
}

/// Arguments of `hook claude-code`.
#[derive(Args)]
pub struct ClaudeCodeArgs {
    /// Approver links to mint when a session's first plan starts its review.
    #[arg(long, default_value_t = 1)]
    approvers: u32,
    /// Reviewer links (comment, do not decide) to mint besides.
    #[arg(long, default_value_t = 0)]
    reviewers: u32,
    /// How long to wait for a decision (`30m`, `4h`, `24h` or seconds);
    /// then the plan is denied with how to go on. Set Claude Code's hook
    /// `timeout` (seconds) to at least this.
    #[arg(long, value_parser = parse_duration, default_value = "24h")]
    timeout: u64,
    /// Lifetime of a new review (`7d`, `12h` …) [default: the server's].
    #[arg(long, value_parser = parse_duration)]
    ttl: Option<u64>,
    /// Portal base for the links [default: $PLANNOTATOR_SHARE_URL, else the
    /// portal the paste server's discovery names].
    #[arg(long)]
    share_url: Option<String>,
    /// A deadline for each new review's decision (`4h`): the hook stops
    /// waiting there (and denies, saying so) as at its timeout.
    #[arg(long, value_parser = parse_duration)]
    deadline: Option<u64>,
    /// Remind the approvers this often while a round is undecided.
    #[arg(long, value_parser = parse_duration)]
    remind: Option<u64>,
    /// An ntfy-style topic URL the approver link subscribes for each new
    /// review: the approver hears of new versions, reminders and the
    /// deadline wherever they are (no plan text is sent).
    #[arg(long, value_name = "URL")]
    notify: Option<String>,
    #[command(flatten)]
    api: ApiArgs,
}

/// Runs a hook; returns what to print on stdout.
pub async fn run(command: HookCommand, env: &Env) -> Result<String, CliError> {
    match command {
        HookCommand::ClaudeCode(args) => claude_code(args, env).await,
    }
}

/// What the hook was asked.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// `ExitPlanMode` of session `session` with `plan`.
    Plan { session: String, plan: String },
    /// A permission request for another tool: not this hook's business.
    OtherTool,
}

/// Reads Claude Code's hook input.
fn parse_input(bytes: &[u8]) -> Result<Request, CliError> {
    let unreadable = |why: String| {
        CliError::Input(format!(
            "cannot read the hook input ({why}); `planshare hook claude-code` reads the JSON Claude Code sends a PermissionRequest hook on stdin"
        ))
    };
    let input: Value = serde_json::from_slice(bytes).map_err(|e| unreadable(e.to_string()))?;
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    if let Some(event) = text("hook_event_name")
        && event != "PermissionRequest"
    {
        return Err(CliError::Input(format!(
            "this hook answers PermissionRequest, and was run for {}: configure it under \"PermissionRequest\" in Claude Code's settings",
            safe_text(event)
        )));
    }
    let tool = text("tool_name").ok_or_else(|| unreadable("no \"tool_name\"".into()))?;
    if tool != "ExitPlanMode" {
        return Ok(Request::OtherTool);
    }
    let session = text("session_id")
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| unreadable("no \"session_id\"".into()))?;
    let plan = input
        .get("tool_input")
        .and_then(|t| t.get("plan"))
        .and_then(Value::as_str)
        .ok_or_else(|| unreadable("no \"tool_input.plan\"".into()))?;
    Ok(Request::Plan {
        session: session.to_owned(),
        plan: plan.to_owned(),
    })
}

/// The one JSON object Claude Code reads: allow, or deny with `message`.
fn answer(deny: Option<&str>) -> String {
    let decision = match deny {
        None => json!({ "behavior": "allow" }),
        Some(message) => json!({ "behavior": "deny", "message": message }),
    };
    let out = json!({
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": decision,
        }
    });
    format!("{out}\n")
}

async fn claude_code(args: ClaudeCodeArgs, env: &Env) -> Result<String, CliError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::Input(format!("cannot read the hook input: {e}")))?;
    let (session, plan) = match parse_input(&bytes)? {
        Request::OtherTool => return Ok(String::new()),
        Request::Plan { session, plan } => (session, plan),
    };
    if plan.trim().is_empty() {
        return Ok(answer(Some(
            "The plan is empty, so there is nothing to review. Write the plan, then present it again.",
        )));
    }
    let payload = SharePayload::markdown(plan);
    let (entry, linked, version) = session_review(&args, env, &session, payload).await?;
    announce(&entry, &version);
    let limit = Duration::from_secs(args.timeout);
    let message = match await_decision(linked, limit).await? {
        Awaited::Decided { decision, .. } if decision.decision == "approved" => {
            return Ok(answer(None));
        }
        Awaited::Decided { decision, feedback } => {
            format!(
                "Changes were requested on v{} of review {} (round {}); the feedback follows. Revise the plan and present it again: it becomes the next version of the same review, and the same people look at it.\n\n{feedback}",
                decision.version, entry.id, decision.round
            )
        }
        Awaited::Open => format!(
            "No decision arrived on {version} of review {} within {}. The review stays open at the same links. To go on, present the plan again: the hook waits on the same review (the person can still decide meanwhile). From a terminal, `planshare review wait {}` waits too.",
            entry.id,
            duration_text(args.timeout),
            entry.id
        ),
        Awaited::Closed(why) => format!(
            "Review {} can no longer be decided: {why}. Present the plan again to start a new review with new links.",
            entry.id
        ),
        Awaited::Deadline(_) => format!(
            "The deadline of review {} passed without a decision on {version}. The review stays open at the same links; its owner can set a new deadline with `planshare review deadline {} 4h`. To go on, present the plan again once someone can decide.",
            entry.id, entry.id
        ),
    };
    Ok(answer(Some(&message)))
}

/// The session's review with `payload` as its latest version: the kept one
/// (pushed to; an unchanged plan stays the version it is), else a new one
/// (kept with the session's id). Answers the entry, the owner's link and
/// "v2 (round 2)".
async fn session_review(
    args: &ClaudeCodeArgs,
    env: &Env,
    session: &str,
    payload: SharePayload,
) -> Result<(Entry, Linked, String), CliError> {
    let kept = keyring::all(env)?
        .into_iter()
        .filter(|e| e.session.as_deref() == Some(session))
        .max_by_key(|e| e.expires_at);
    if let Some(entry) = kept {
        let linked = Linked::from_link(&entry.owner, &args.api, env)?;
        match linked.check(false).await {
            Ok(Checked { view, .. }) => {
                let pushed = push_payload(&linked, &view, &payload, false).await?;
                let round = pushed.round.unwrap_or(view.round);
                return Ok((entry, linked, format!("v{} (round {round})", pushed.n)));
            }
            Err(CliError::ReviewLinkRefused(_) | CliError::ReviewNotFound) => warn(&format!(
                "this session's review {} is gone (expired or deleted): starting a new one",
                entry.id
            )),
            Err(other) => return Err(other),
        }
    }
    let new = NewReview {
        payload,
        reviewers: args.reviewers,
        approvers: args.approvers,
        ttl: args.ttl,
        share_url: args.share_url.clone(),
        session: Some(session.to_owned()),
        deadline: args.deadline,
        remind: args.remind,
        notify: args.notify.clone(),
    };
    let entry = create_review(new, &args.api, env).await?;
    keep_new(env, &entry);
    let linked = Linked::from_link(&entry.owner, &args.api, env)?;
    Ok((entry, linked, "v1 (round 1)".to_owned()))
}

/// Tells the person at the terminal (and stderr, which Claude Code shows
/// in its transcript) where to decide: the links for people, approvers
/// first. The owner link is never shown.
fn announce(entry: &Entry, version: &str) {
    let mut text = format!(
        "planshare: the plan, {version} of review {}, waits for a decision.\n",
        entry.id
    );
    let mut links: Vec<_> = entry.links.iter().collect();
    links.sort_by_key(|l| l.role != "approver");
    if links.is_empty() {
        text.push_str(
            "  This review has no links for people: add one with `planshare review links ID --add --approver`.\n",
        );
    }
    for link in links {
        let what = if link.role == "approver" {
            "approve or request changes"
        } else {
            "comment"
        };
        text.push_str(&format!("  {} ({what}): {}\n", link.role, link.url));
    }
    let text = safe_text(&text).into_owned();
    let _ = std::io::stderr().write_all(text.as_bytes());
    // The terminal Claude Code runs in, when there is one: its own screen
    // does not show a hook's stderr until the hook ends.
    if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
        let _ = tty.write_all(text.replace('\n', "\r\n").as_bytes());
    }
}

/// `24h`, `90m`, `45s` for a number of seconds.
fn duration_text(secs: u64) -> String {
    match secs {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_plan_mode_needs_a_session_and_a_plan() {
        let input = br##"{"session_id":"s1","cwd":"/w","hook_event_name":"PermissionRequest","tool_name":"ExitPlanMode","tool_input":{"plan":"# P"}}"##;
        assert_eq!(
            parse_input(input).unwrap(),
            Request::Plan {
                session: "s1".into(),
                plan: "# P".into()
            }
        );
        for bad in [
            &b"not json"[..],
            br#"{"tool_name":"ExitPlanMode","tool_input":{"plan":"x"}}"#,
            br#"{"session_id":"s","tool_name":"ExitPlanMode","tool_input":{}}"#,
            br#"{"session_id":"s","tool_input":{"plan":"x"}}"#,
            br#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"ExitPlanMode","tool_input":{"plan":"x"}}"#,
        ] {
            assert!(
                matches!(parse_input(bad), Err(CliError::Input(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn other_tools_are_not_this_hooks_business() {
        let input = br#"{"session_id":"s1","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
        assert_eq!(parse_input(input).unwrap(), Request::OtherTool);
    }

    #[test]
    fn the_answer_is_one_line_of_json() {
        let allow: Value = serde_json::from_str(&answer(None)).unwrap();
        assert_eq!(
            allow,
            json!({"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}})
        );
        let deny = answer(Some("fix \"this\"\nand that"));
        assert_eq!(deny.lines().count(), 1);
        let deny: Value = serde_json::from_str(&deny).unwrap();
        assert_eq!(
            deny["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": "fix \"this\"\nand that"})
        );
    }

    #[test]
    fn durations_read_back() {
        assert_eq!(duration_text(86_400), "1d");
        assert_eq!(duration_text(7200), "2h");
        assert_eq!(duration_text(90), "90s");
        assert_eq!(duration_text(120), "2m");
    }
}

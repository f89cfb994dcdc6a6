//! `planshare mcp`: the review loop as an MCP server over stdio, so an
//! agent (Claude Code, or any MCP client) can put its plan in front of
//! people and wait for their decision without a shell.
//!
//! The tools are thin: each is a review command's building block from
//! `review/` (create and keep, push, await the decision, threads). What
//! they add is the agent's side of the contract:
//!
//! - A review is named by its id in the keyring, as `review start` keeps
//!   it: the owner link (its key and owner token) never passes through the
//!   agent's context, and a restarted server goes on with every review.
//! - Results are JSON (text and structured content); they carry the links
//!   for people, never the owner link or its token.
//! - A failure is a tool error (`isError`) carrying the message a person
//!   would read on the terminal, so the agent can act on it; a protocol
//!   error is only for a malformed call.
//! - Stdout is the protocol: nothing else writes there while serving;
//!   warnings go to stderr.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{ServerHandler, ServiceExt as _, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use share_codec::SharePayload;

use crate::env::Env;
use crate::error::CliError;
use crate::paste::ApiArgs;
use crate::review::watch::{Awaited, await_decision};
use crate::review::{self, Checked, Linked, NewReview, keyring, threads};

/// The longest single wait, in seconds. MCP clients time requests out on
/// their own (the TypeScript SDK after 60 s by default), so a long wait is
/// several calls anyway; an hour bounds a client that sets no limit.
const MAX_WAIT_SECS: u64 = 3600;

/// The wait when the call names none: under the TypeScript SDK's default
/// request timeout of 60 s.
const DEFAULT_WAIT_SECS: u64 = 50;

/// Arguments of `planshare mcp`.
#[derive(Args)]
pub struct McpArgs {
    /// The name the owner link writes replies and resolutions under (until
    /// the review's owner has bound one).
    #[arg(long, default_value = "Agent")]
    name: String,
    #[command(flatten)]
    api: ApiArgs,
}

/// Serves MCP on stdin/stdout until the client closes stdin; answers the
/// empty string, as `main` prints what a command answers and stdout was
/// the protocol.
pub async fn run(args: McpArgs, env: &Env) -> Result<String, CliError> {
    let server = Server {
        state: Arc::new(State {
            api: args.api,
            env: env.clone(),
            name: args.name,
        }),
        tool_router: Server::tool_router(),
    };
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| CliError::Output(format!("MCP: the client's handshake failed: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| CliError::Output(format!("MCP: the server stopped: {e}")))?;
    Ok(String::new())
}

/// What every tool call reads: where the API is, the process's
/// environment (the keyring's place), and the name to write under.
struct State {
    api: ApiArgs,
    env: Env,
    name: String,
}

/// The MCP server: the review tools over the shared [`State`].
#[derive(Clone)]
struct Server {
    state: Arc<State>,
    tool_router: ToolRouter<Self>,
}

/// A lifetime: `7d`, `12h`, `30m`, `90s`, or seconds.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum Ttl {
    /// Seconds.
    Seconds(u64),
    /// `7d`, `12h`, `30m`, `90s` or `2w`.
    Text(String),
}

/// Arguments of `start_review`.
#[derive(Deserialize, JsonSchema)]
struct StartReview {
    /// The plan, as markdown text.
    plan: String,
    /// A title: becomes the plan's `# ` heading when it has none.
    title: Option<String>,
    /// How many approver links to make (an approver reads, comments and
    /// decides). Default 1.
    approvers: Option<u32>,
    /// How many reviewer links to make (a reviewer reads and comments).
    /// Default 0.
    reviewers: Option<u32>,
    /// How long the review lives: "7d", "12h", "30m" or seconds. Default:
    /// the server's.
    ttl: Option<Ttl>,
    /// A deadline for the decision, in seconds from now: wait_for_decision
    /// stops there, answering state "open" with the deadline.
    deadline_s: Option<u64>,
    /// Remind the approvers this often (seconds, at least 60) while the
    /// round is undecided.
    remind_s: Option<u64>,
    /// An ntfy-style topic URL the first approver link subscribes, so the
    /// approver hears of new versions, reminders and the deadline.
    notify_url: Option<String>,
}

/// Arguments of `push_version`.
#[derive(Deserialize, JsonSchema)]
struct PushVersion {
    /// The review's id (as start_review answered it).
    review: String,
    /// The whole new plan, as markdown text.
    plan: String,
    /// A progress push: only checklist marks (`- [ ]` / `- [x]`) changed.
    /// It keeps an approval and the round; refused when anything else
    /// changed. Default false (a new round, which voids an approval).
    progress: Option<bool>,
}

/// Arguments of `wait_for_decision`.
#[derive(Deserialize, JsonSchema)]
struct WaitForDecision {
    /// The review's id.
    review: String,
    /// How long to wait, in seconds (1 to 3600; default 50). Keep it under
    /// your MCP client's request timeout (60 s by default in the
    /// TypeScript SDK) and call again while the state is "open": nothing
    /// is lost between calls.
    timeout_s: Option<u64>,
}

/// Arguments of `list_threads`.
#[derive(Deserialize, JsonSchema)]
struct ListThreads {
    /// The review's id.
    review: String,
    /// Only the open threads. Default false.
    open_only: Option<bool>,
}

/// Arguments of `reply`.
#[derive(Deserialize, JsonSchema)]
struct Reply {
    /// The review's id.
    review: String,
    /// The thread's id (as list_threads answers it).
    thread: String,
    /// The reply.
    text: String,
    /// Says the latest version addresses the thread. Default false.
    addressed: Option<bool>,
}

/// Arguments of `resolve`.
#[derive(Deserialize, JsonSchema)]
struct Resolve {
    /// The review's id.
    review: String,
    /// The thread's id.
    thread: String,
}

#[tool_router]
impl Server {
    /// Start a review of a plan: people get links to read it, comment and
    /// approve or request changes. Answers the review's id (for the other
    /// tools), version 1, round 1, when it expires, and the links to hand
    /// to people.
    #[tool]
    async fn start_review(&self, Parameters(args): Parameters<StartReview>) -> CallToolResult {
        answer(self.start(args).await)
    }

    /// Push a new version of the plan to a review. A plain push opens a new
    /// round (an approval of the previous one is void); with progress=true
    /// only checklist marks may change, and the round and its decision stay.
    #[tool]
    async fn push_version(&self, Parameters(args): Parameters<PushVersion>) -> CallToolResult {
        answer(self.push(args).await)
    }

    /// Wait for the decision on the review's current round. Answers state
    /// "approved" or "changes_requested" with who decided and the feedback
    /// (every comment, anchored on the latest version), "open" when the
    /// wait ran out (call again: nothing is lost), or "closed" when the
    /// review is gone. MCP clients time requests out (60 s by default in
    /// the TypeScript SDK): pass a timeout_s below yours and call again.
    #[tool]
    async fn wait_for_decision(
        &self,
        Parameters(args): Parameters<WaitForDecision>,
    ) -> CallToolResult {
        answer(self.wait(args).await)
    }

    /// The review's threads: each comment with its quote of the plan, its
    /// author, state (open or resolved) and replies.
    #[tool]
    async fn list_threads(&self, Parameters(args): Parameters<ListThreads>) -> CallToolResult {
        answer(self.threads(args).await)
    }

    /// Reply in a thread of the review (as the owner, under this server's
    /// --name); addressed=true says the latest version addresses it.
    #[tool]
    async fn reply(&self, Parameters(args): Parameters<Reply>) -> CallToolResult {
        answer(self.reply_to(args).await)
    }

    /// Resolve a thread of the review (as its owner).
    #[tool]
    async fn resolve(&self, Parameters(args): Parameters<Resolve>) -> CallToolResult {
        answer(self.resolve_thread(args).await)
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "planshare",
    instructions = "Plan reviews by people: start_review with your plan and hand the links it answers to people; wait_for_decision (call it again while it answers \"open\"); on changes_requested, read the feedback and list_threads, push_version the revised plan, reply to and resolve threads; stop waiting once it answers approved."
)]
impl ServerHandler for Server {}

impl Server {
    /// The owner link of `review` (an id in the keyring, or a review link),
    /// resolved to the review it names.
    fn linked(&self, review: &str) -> Result<Linked, CliError> {
        let State { api, env, .. } = &*self.state;
        if review == "-" {
            // `-` reads a link from standard input elsewhere: here stdin is
            // the protocol.
            return Err(CliError::Usage(
                "review: give the review's id (as start_review answered it)".into(),
            ));
        }
        if review::is_id(review) && keyring::load(env, review)?.is_none() {
            return Err(CliError::Usage(format!(
                "no review {review} in the keyring ({}): give the id start_review answered, or see `planshare review list`",
                keyring::dir(env)
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            )));
        }
        Linked::from_link(review, api, env)
    }

    async fn start(&self, args: StartReview) -> Result<Value, CliError> {
        let State { api, env, .. } = &*self.state;
        let ttl = match args.ttl {
            None => None,
            Some(Ttl::Seconds(0)) => {
                return Err(CliError::Usage(
                    "ttl: a duration must be at least 1 second".into(),
                ));
            }
            Some(Ttl::Seconds(secs)) => Some(secs),
            Some(Ttl::Text(text)) => Some(
                review::parse_duration(&text).map_err(|e| CliError::Usage(format!("ttl: {e}")))?,
            ),
        };
        let plan = titled(args.plan, args.title.as_deref());
        if plan.trim().is_empty() {
            return Err(CliError::Usage("plan: the plan is empty".into()));
        }
        let new = NewReview {
            payload: SharePayload::markdown(plan),
            reviewers: args.reviewers.unwrap_or(0),
            approvers: args.approvers.unwrap_or(1),
            ttl,
            share_url: None,
            session: None,
            deadline: args.deadline_s,
            remind: args.remind_s,
            notify: args.notify_url,
        };
        let entry = review::create_review(new, api, env).await?;
        review::keep_new(env, &entry);
        // The links for people only: the owner link stays in the keyring.
        let links: Vec<Value> = entry
            .links
            .iter()
            .map(|l| json!({ "id": l.id, "role": l.role, "url": l.url }))
            .collect();
        Ok(json!({
            "review": entry.id,
            "version": 1,
            "round": 1,
            "expiresAt": entry.expires_at,
            "links": links,
        }))
    }

    async fn push(&self, args: PushVersion) -> Result<Value, CliError> {
        let linked = self.linked(&args.review)?;
        let progress = args.progress.unwrap_or(false);
        // The version is sealed with the link's key: check that it opens
        // the review first (as `review push` does).
        let Checked { view, latest } = linked.check(true).await?;
        if view.you.role != "owner" {
            return Err(CliError::Unauthorized(
                "only the review's owner can push: this is a reviewer link".into(),
            ));
        }
        if progress {
            let latest = match latest {
                Some(latest) => latest,
                None => linked.latest(&view).await?,
            };
            if !plan_doc::only_checklist_marks_differ(&latest.plan, &args.plan) {
                return Err(CliError::Input(format!(
                    "progress: this plan changes more than checklist marks since v{}; push it without progress (it opens a new round, and voids an approval)",
                    view.latest
                )));
            }
        }
        let payload = SharePayload::markdown(args.plan);
        let pushed = review::push_payload(&linked, &view, &payload, progress).await?;
        let mut out = json!({
            "review": linked.id,
            "version": pushed.n,
            "round": pushed.round.unwrap_or(view.round),
        });
        if pushed.unchanged == Some(true) {
            out["unchanged"] = json!(true);
        }
        Ok(out)
    }

    async fn wait(&self, args: WaitForDecision) -> Result<Value, CliError> {
        let secs = args
            .timeout_s
            .unwrap_or(DEFAULT_WAIT_SECS)
            .clamp(1, MAX_WAIT_SECS);
        let linked = self.linked(&args.review)?;
        let id = linked.id.clone();
        // The link is checked (its token, and that its key opens the plan)
        // before anything is waited for.
        let Checked { view, .. } = match linked.check(true).await {
            Ok(checked) => checked,
            Err(CliError::ReviewLinkRefused(_)) => {
                return Ok(closed(
                    &id,
                    "the review is gone (deleted or expired), or its owner link is refused",
                ));
            }
            Err(other) => return Err(other),
        };
        let awaited = await_decision(linked, Duration::from_secs(secs)).await;
        match awaited {
            Ok(Awaited::Decided { decision, feedback }) => {
                // Who decided, as the export names them (a fresh read: the
                // owner's bound name may be new).
                let now = self.linked(&args.review)?.view().await.unwrap_or(view);
                Ok(json!({
                    "review": id,
                    "state": decision.decision,
                    "version": decision.version,
                    "round": decision.round,
                    "by": review::decider_label(&now, &decision),
                    "feedback": feedback,
                }))
            }
            Ok(Awaited::Open) => {
                let now = self.linked(&args.review)?.view().await.unwrap_or(view);
                Ok(json!({
                    "review": id,
                    "state": "open",
                    "version": now.latest,
                    "round": now.round,
                    "waited": secs,
                    "note": "no decision yet: call wait_for_decision again",
                }))
            }
            Ok(Awaited::Deadline(deadline)) => {
                let now = self.linked(&args.review)?.view().await.unwrap_or(view);
                Ok(json!({
                    "review": id,
                    "state": "open",
                    "version": now.latest,
                    "round": now.round,
                    "deadline": deadline,
                    "note": "the review's deadline passed without a decision; the review stays open (its owner can set a new deadline)",
                }))
            }
            Ok(Awaited::Closed(why)) | Err(CliError::ReviewClosed(why)) => Ok(closed(&id, &why)),
            Err(other) => Err(other),
        }
    }

    async fn threads(&self, args: ListThreads) -> Result<Value, CliError> {
        let linked = self.linked(&args.review)?;
        let open_only = args.open_only.unwrap_or(false);
        let all = threads::current(&linked).await?;
        let shown: Vec<_> = all
            .iter()
            .filter(|t| !open_only || t.state == "open")
            .map(threads::out)
            .collect();
        Ok(json!({ "review": linked.id, "threads": shown }))
    }

    async fn reply_to(&self, args: Reply) -> Result<Value, CliError> {
        let linked = self.linked(&args.review)?;
        let addressed = args.addressed.unwrap_or(false);
        threads::reply_in(
            &linked,
            Some(&self.state.name),
            &args.thread,
            &args.text,
            addressed,
        )
        .await?;
        Ok(
            json!({ "review": linked.id, "thread": args.thread, "replied": true, "addressed": addressed }),
        )
    }

    async fn resolve_thread(&self, args: Resolve) -> Result<Value, CliError> {
        let linked = self.linked(&args.review)?;
        threads::change_state(&linked, Some(&self.state.name), &args.thread, "resolved").await?;
        Ok(json!({ "review": linked.id, "thread": args.thread, "state": "resolved" }))
    }
}

/// `plan` with `# title` on top when a title is given and the plan has no
/// top-level heading of its own (the portal and `review list` show it).
fn titled(plan: String, title: Option<&str>) -> String {
    match title.map(str::trim) {
        Some(title) if !title.is_empty() && !plan.lines().any(|l| l.starts_with("# ")) => {
            format!("# {title}\n\n{plan}")
        }
        _ => plan,
    }
}

/// The answer of a review that no longer answers its owner link.
fn closed(id: &str, why: &str) -> Value {
    json!({ "review": id, "state": "closed", "reason": why })
}

/// A tool's outcome as MCP answers it: the JSON as text and as structured
/// content, or a tool error with the message a person would read.
fn answer(outcome: Result<Value, CliError>) -> CallToolResult {
    match outcome {
        Ok(value) => CallToolResult::structured(value),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_heads_a_plan_without_one() {
        assert_eq!(
            titled("Step 1\n".into(), Some("Auth")),
            "# Auth\n\nStep 1\n"
        );
        assert_eq!(titled("# Mine\n".into(), Some("Auth")), "# Mine\n");
        assert_eq!(
            titled("## Sub\n".into(), Some("Auth")),
            "# Auth\n\n## Sub\n"
        );
        assert_eq!(titled("Step\n".into(), None), "Step\n");
        assert_eq!(titled("Step\n".into(), Some("  ")), "Step\n");
    }

    #[test]
    fn failures_are_tool_errors_with_the_message() {
        let result = answer(Err(CliError::Usage("no review abcdefgh".into())));
        assert_eq!(result.is_error, Some(true));
        let text = serde_json::to_value(&result.content).unwrap_or_default();
        assert_eq!(text[0]["text"], "no review abcdefgh");
        let ok = answer(Ok(json!({ "review": "abcdefgh" })));
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, Some(json!({ "review": "abcdefgh" })));
    }
}

//! `planshare review …`: live reviews through the review API
//! (`/api/v1/reviews`), and `planshare open` of a review link.
//!
//! The review key (AES-256-GCM, 32 random bytes) is made here and lives
//! only in the links' `#key=`; every `data` sent is a short-link paste
//! encrypted with it: versions carry the share payload `{p, a, g?}`, comment
//! sets and decision feedback `{"v": n, "a": [tuples], "g"?: […]}`. Tokens
//! travel only in `Authorization: Bearer`. Neither ever reaches stderr: the
//! owner and reviewer links are results, printed on stdout only.

mod api;
mod export;
pub(crate) mod keyring;
mod notify;
pub mod sse;
pub(crate) mod threads;
pub(crate) mod watch;

use api_types::reviews as wire;
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::Value;
use share_codec::tuple::to_shareable_images;
use share_codec::{
    Annotation, AnnotationType, CodecError, ImageAttachment, Json, ReviewLink, ShareKey,
    SharePayload, TupleLayout, compress, decompress, decrypt, encrypt_with, plan_digest,
    review_url, to_shareable,
};

use crate::annotations;
use crate::client::printable;
use crate::discovery::{Purpose, is_upstream, portal_base};
use crate::env::Env;
use crate::error::CliError;
use crate::open::{Format, MAX_INFLATED_BYTES};
use crate::paste::{ApiArgs, read_input};
use crate::terminal::{json_line, safe_text};

pub use api::ReviewApi;

/// Live reviews: one plan, its versions, reviewers' comments, a decision.
#[derive(Subcommand)]
pub enum ReviewCommand {
    /// Start a review of a plan; prints the owner link and reviewer links.
    Start(StartArgs),
    /// Push a new version of the plan to a review (owner link).
    Push(PushArgs),
    /// List, add or revoke reviewer links (owner link).
    Links(LinksArgs),
    /// Follow a review's events until the owner decides; prints the
    /// feedback (exit 0 approved, 15 changes requested, 16 closed/revoked).
    Watch(watch::WatchArgs),
    /// Approve or request changes (the owner's or an approver's link) on
    /// the version read, with optional feedback.
    Decide(DecideArgs),
    /// List the review's threads (comments with their replies and state).
    Threads(threads::ThreadsArgs),
    /// Start a thread: a comment, on a quote of the plan or on the whole;
    /// prints the thread's id.
    Comment(threads::CommentArgs),
    /// Reply in a thread.
    Reply(threads::ReplyArgs),
    /// Resolve a thread (its author, the owner or an approver).
    Resolve(threads::StateArgs),
    /// Reopen a resolved thread (its author, the owner or an approver).
    Reopen(threads::StateArgs),
    /// The reviews in your keyring (those `review start` made), read now.
    List(keyring::ListArgs),
    /// Wait for this round's decision, for scripts: the feedback on
    /// stdout; exit 0 approved, 15 changes requested, 16 closed or
    /// revoked, 17 timed out (`--timeout`).
    Wait(watch::WaitArgs),
    /// Set, change or clear the review's deadline and reminders (owner).
    Deadline(DeadlineArgs),
    /// Hear of the review's changes: a webhook or an ntfy topic per link
    /// (`--webhook URL`, `--ntfy URL`), `--list`, `--remove ID`,
    /// `--deliveries ID`.
    Notify(notify::NotifyArgs),
}

/// Arguments of `review start`.
#[derive(Args)]
pub struct StartArgs {
    /// The plan: a markdown file (or HTML document); `-` reads standard input.
    plan: String,
    /// Annotations to include in version 1 (as `share --annotations` takes them).
    #[arg(long, value_name = "FILE.json")]
    annotations: Option<String>,
    /// How many reviewer links to mint (the server caps live links, 8 by default).
    #[arg(long, default_value_t = 1)]
    links: u32,
    /// How many approver links to mint besides (an approver also decides;
    /// the owner link always can).
    #[arg(long, default_value_t = 0)]
    approvers: u32,
    /// Lifetime of the review: `7d`, `12h`, `30m`, `90s` or seconds
    /// [default: the server's default paste lifetime].
    #[arg(long, value_parser = parse_duration)]
    ttl: Option<u64>,
    /// A deadline for the decision, from now (`4h`, `2d`): `review.deadline`
    /// goes to the review's subscriptions when it passes undecided, and
    /// `wait`, `watch`, the hook and MCP stop waiting there.
    #[arg(long, value_parser = parse_duration)]
    deadline: Option<u64>,
    /// Remind the deciders this often while the round is undecided
    /// (`1h`; at least a minute).
    #[arg(long, value_parser = parse_duration)]
    remind: Option<u64>,
    /// Print `{"id","owner","reviewers":[…],"expiresAt","links":[{"id","role","url"}]}`
    /// as JSON (`reviewers`: every link's URL, approvers' included).
    #[arg(long)]
    json: bool,
    /// Also print each reviewer link as a QR code (terminal).
    #[arg(long)]
    qr: bool,
    /// Treat the input as a raw HTML document.
    #[arg(long)]
    html: bool,
    /// Portal base for the links [default: $PLANNOTATOR_SHARE_URL, else the
    /// portal the paste server's discovery names].
    #[arg(long)]
    share_url: Option<String>,
    #[command(flatten)]
    api: ApiArgs,
}

/// Arguments of `review push`.
#[derive(Args)]
pub struct PushArgs {
    /// The new plan; `-` reads standard input.
    plan: String,
    /// The owner link.
    #[arg(long = "review", value_name = "OWNER_LINK")]
    review: String,
    /// Annotations to include with this version.
    #[arg(long, value_name = "FILE.json")]
    annotations: Option<String>,
    /// Treat the input as a raw HTML document.
    #[arg(long)]
    html: bool,
    /// A progress push: only checklist marks (`- [ ]` / `- [x]`) changed
    /// since the latest version. An approval stays; refused here if the
    /// plan changed in any other way.
    #[arg(long, conflicts_with = "html")]
    progress: bool,
    #[command(flatten)]
    api: ApiArgs,
}

/// Arguments of `review links`.
#[derive(Args)]
pub struct LinksArgs {
    /// The owner link.
    link: String,
    /// Mint one more reviewer link and print it.
    #[arg(long, conflicts_with = "revoke")]
    add: bool,
    /// With `--add`: an approver's link (reads, comments and decides).
    #[arg(long, requires = "add")]
    approver: bool,
    /// Revoke the reviewer link with this id.
    #[arg(long, value_name = "ID")]
    revoke: Option<String>,
    /// Print `{"id","expiresAt","links":[{"id","role","name","createdAt"}]}`
    /// (with `--add`: `{"id","role","url"}`) as JSON.
    #[arg(long, conflicts_with = "revoke")]
    json: bool,
    #[command(flatten)]
    api: ApiArgs,
}

/// Arguments of `review deadline`.
#[derive(Args)]
pub struct DeadlineArgs {
    /// The review: its id in your keyring, the owner link, or `-`.
    link: String,
    /// The deadline, from now (`4h`, `2d`, seconds).
    #[arg(value_parser = parse_duration, required_unless_present_any = ["clear", "remind"])]
    within: Option<u64>,
    /// Remind the deciders this often while the round is undecided.
    #[arg(long, value_parser = parse_duration)]
    remind: Option<u64>,
    /// Remove the deadline and the reminders.
    #[arg(long, conflicts_with_all = ["within", "remind"])]
    clear: bool,
    #[command(flatten)]
    api: ApiArgs,
}

/// Arguments of `review decide`.
#[derive(Args)]
pub struct DecideArgs {
    /// The owner link or an approver's link.
    link: String,
    /// The version decided on (as `watch` or the page showed it); refused
    /// when a newer one was pushed since. Default: the latest, as read now.
    #[arg(long = "version", value_name = "N")]
    version: Option<u64>,
    /// The name to decide under (an approver link that has not commented
    /// must give one; it is bound to the link for good).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Approve the plan.
    #[arg(long, group = "decision", required = true)]
    approve: bool,
    /// Request changes.
    #[arg(long, group = "decision", required = true)]
    request_changes: bool,
    /// Feedback to send with the decision: annotations JSON (any shape
    /// `share --annotations` takes, or `{"v":n,"a":[…]}`), or plain text,
    /// which becomes one global comment.
    #[arg(long, value_name = "FILE")]
    feedback: Option<String>,
    #[command(flatten)]
    api: ApiArgs,
}

/// Runs a review command; returns what to print on stdout.
pub async fn run(command: ReviewCommand, env: &Env) -> Result<String, CliError> {
    match command {
        ReviewCommand::Start(args) => start(args, env).await,
        ReviewCommand::Push(args) => push(args, env).await,
        ReviewCommand::Links(args) => links(args, env).await,
        ReviewCommand::Watch(args) => watch::run(args, env).await,
        ReviewCommand::Decide(args) => decide(args, env).await,
        ReviewCommand::Threads(args) => threads::list(args, env).await,
        ReviewCommand::Comment(args) => threads::comment(args, env).await,
        ReviewCommand::Reply(args) => threads::reply(args, env).await,
        ReviewCommand::Resolve(args) => threads::set_state(args, "resolved", env).await,
        ReviewCommand::Reopen(args) => threads::set_state(args, "open", env).await,
        ReviewCommand::List(args) => keyring::list(args, env).await,
        ReviewCommand::Wait(args) => watch::wait(args, env).await,
        ReviewCommand::Notify(args) => notify::run(args, env).await,
        ReviewCommand::Deadline(args) => deadline(args, env).await,
    }
}

/// A review reached through a link: where, which, with what key and token.
pub struct Linked {
    pub api: ReviewApi,
    pub id: String,
    pub key: ShareKey,
    pub token: String,
    /// The portal base of the link.
    pub base: String,
}

impl Linked {
    /// Resolves `link`: the API is `--paste-url` when given, else the
    /// link's `&paste=`, else the portal's own origin.
    pub fn from_link(link: &str, api: &ApiArgs, env: &Env) -> Result<Self, CliError> {
        let link = keyring::resolve(link, env)?;
        let parsed = share_codec::parse_review_link(&link).map_err(link_error)?;
        let ReviewLink {
            base,
            id,
            key,
            token,
            api: named,
        } = parsed;
        let key = ShareKey::parse(&key).map_err(|e| match e {
            CodecError::InvalidKey(why) => CliError::InvalidReviewLink(format!(
                "its key is invalid ({why}): the link is damaged; copy it again"
            )),
            other => CliError::InvalidReviewLink(other.to_string()),
        })?;
        let token = token.ok_or_else(|| {
            CliError::InvalidReviewLink(
                "it has no token (&t=…): it cannot be used; ask the review's owner for a reviewer link"
                    .into(),
            )
        })?;
        if !api_types::rules::is_review_token(&token) {
            return Err(CliError::InvalidReviewLink(
                "its token (&t=…) is not 43 letters, digits, '-' or '_': the link is damaged; copy it again"
                    .into(),
            ));
        }
        if !is_id(&id) {
            return Err(CliError::InvalidReviewLink(
                "its review id is not 6-16 letters or digits: the link is damaged; copy it again"
                    .into(),
            ));
        }
        let api_base = match (&api.paste_url, named) {
            (Some(chosen), _) => chosen.clone(),
            (None, Some(named)) => named,
            (None, None) => origin_of(&base)?,
        };
        if is_upstream(&api_base) {
            // Upstream's hosted services keep no reviews.
            return Err(CliError::NoReviewApi(printable(
                api_base.trim_end_matches('/'),
            )));
        }
        Ok(Linked {
            api: ReviewApi::new(api.client_for(&api_base, env)?)?,
            id,
            key,
            token,
            base,
        })
    }

    /// The review as this link's holder sees it.
    pub async fn view(&self) -> Result<wire::ReviewView, CliError> {
        self.api.get(&self.id, &self.token).await
    }

    /// A review command's first read, before it acts or waits: the review
    /// as this link sees it, a refusal said as such (the server answers a
    /// wrong token and an absent review alike, 404; a missing or malformed
    /// one is caught before sending). With `key`, the latest version is
    /// also read and decrypted with the link's key, so a damaged key is
    /// said before anything is encrypted with it or waited for.
    pub async fn check(&self, key: bool) -> Result<Checked, CliError> {
        let view = self.view().await.map_err(|e| self.refused(e))?;
        let latest = if key {
            Some(self.latest(&view).await?)
        } else {
            None
        };
        Ok(Checked { view, latest })
    }

    /// The latest version's payload, decrypted with the link's key.
    pub async fn latest(&self, view: &wire::ReviewView) -> Result<SharePayload, CliError> {
        let version = self
            .api
            .version(&self.id, &self.token, view.latest)
            .await
            .map_err(|e| self.refused(e))?;
        let json = unseal(&self.key, &version.data).map_err(|e| self.key_error(e))?;
        SharePayload::from_json(&json).map_err(|e| {
            CliError::ReviewService(format!("version {} does not read: {e}", view.latest))
        })
    }

    /// `error` of a read with this link's token: a review that does not
    /// answer it is a refusal of the link.
    fn refused(&self, error: CliError) -> CliError {
        match error {
            CliError::ReviewNotFound | CliError::Unauthorized(_) => {
                CliError::ReviewLinkRefused(safe_text(&self.id).into_owned())
            }
            other => other,
        }
    }

    /// `error` of decrypting the review's plan: a key that does not open
    /// it is a damaged link.
    fn key_error(&self, error: CliError) -> CliError {
        match error {
            CliError::Decrypt => CliError::ReviewKey(safe_text(&self.id).into_owned()),
            other => other,
        }
    }

    /// A link to this review with `token`, for the same portal and API.
    pub fn link_with(&self, token: &str) -> Result<String, CliError> {
        make_link(&self.base, &self.id, &self.key, token, self.api.base())
    }
}

/// What [`Linked::check`] read.
pub struct Checked {
    /// The review as the link sees it.
    pub view: wire::ReviewView,
    /// The latest version, decrypted (when the key was checked).
    pub latest: Option<SharePayload>,
}

/// The origin (`scheme://host[:port]`) of a portal base.
fn origin_of(base: &str) -> Result<String, CliError> {
    let url = url::Url::parse(base)
        .map_err(|e| CliError::InvalidReviewLink(format!("its address is invalid: {e}")))?;
    match url.origin() {
        origin @ url::Origin::Tuple(..) => Ok(origin.ascii_serialization()),
        url::Origin::Opaque(_) => Err(CliError::InvalidReviewLink(
            "its address has no host".into(),
        )),
    }
}

/// A review link; `&paste=` only when `api` is not the portal's own origin.
/// A token that is not 43 base64url characters (as the API makes them) is
/// refused: it stays out of the link, and so off the terminal.
fn make_link(
    portal: &str,
    id: &str,
    key: &ShareKey,
    token: &str,
    api: &str,
) -> Result<String, CliError> {
    if !api_types::rules::is_review_token(token) {
        return Err(CliError::ReviewService(
            "the review API answered a token that is not 43 base64url characters".into(),
        ));
    }
    let own = origin_of(portal).is_ok_and(|origin| origin == api);
    Ok(review_url(portal, id, key, token, (!own).then_some(api)))
}

fn link_error(error: CodecError) -> CliError {
    match error {
        CodecError::InvalidLink(message) => CliError::InvalidReviewLink(message),
        other => CliError::InvalidReviewLink(format!("bad &paste= value: {other}")),
    }
}

/// A review or link id: 6–16 ASCII letters or digits.
pub(crate) fn is_id(id: &str) -> bool {
    (6..=16).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Parses `7d`, `12h`, `30m`, `45s`, `2w` or plain seconds into seconds.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 7d, 12h, 30m, 90s or 3600)"))?;
    let scale = match unit.trim() {
        "s" | "sec" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return Err(format!("unknown unit in {text:?}: use s, m, h, d or w")),
    };
    match n.checked_mul(scale) {
        Some(0) => Err("a duration must be at least 1 second".into()),
        Some(secs) => Ok(secs),
        None => Err(format!("{text:?} is too long")),
    }
}

/// Encrypts JSON text as a short-link paste with the review key.
fn seal(key: &ShareKey, json: &str) -> Result<String, CliError> {
    if json.len() > MAX_INFLATED_BYTES {
        return Err(CliError::TooLarge(format!(
            "{} bytes as JSON; a review's data is limited to {} bytes ({} MiB)",
            json.len(),
            MAX_INFLATED_BYTES,
            MAX_INFLATED_BYTES / (1024 * 1024)
        )));
    }
    let mut iv = [0u8; share_codec::crypto::IV_LEN];
    getrandom::fill(&mut iv).map_err(|_| CliError::Output("no random source".into()))?;
    Ok(encrypt_with(key, &iv, &compress(json)))
}

/// Most characters of a notification preview.
const PREVIEW_CHARS: usize = 140;

/// The preview a write's notifications carry, sealed under the review key
/// as a comment set is: `{"text"}` with the first line of `text`, at most
/// [`PREVIEW_CHARS`] characters. Only key holders read it.
pub(crate) fn seal_preview(key: &ShareKey, text: &str) -> Result<String, CliError> {
    let line = text.trim().lines().next().unwrap_or_default().trim();
    let mut short: String = line.chars().take(PREVIEW_CHARS).collect();
    if line.chars().count() > PREVIEW_CHARS {
        short.push('…');
    }
    seal(key, &serde_json::json!({ "text": short }).to_string())
}

/// Decrypts and inflates a review `data` field to its JSON text.
fn unseal(key: &ShareKey, data: &str) -> Result<String, CliError> {
    let compressed = decrypt(data, &key.to_base64url()).map_err(|e| match e {
        CodecError::DecryptFailed
        | CodecError::CiphertextTooShort { .. }
        | CodecError::InvalidUtf8
        | CodecError::InvalidBase64(_) => CliError::Decrypt,
        other => CliError::ReviewService(format!("the review's data does not decrypt: {other}")),
    })?;
    decompress(&compressed, MAX_INFLATED_BYTES)
        .map_err(|e| CliError::ReviewService(format!("the review's data does not decode: {e}")))
}

/// A version's plaintext: the share payload.
fn version_payload(
    file: &str,
    html: bool,
    annotations: Option<&str>,
) -> Result<SharePayload, CliError> {
    let text = read_input(file)?;
    let lower = file.to_ascii_lowercase();
    let head = text
        .trim_start()
        .get(..15)
        .unwrap_or("")
        .to_ascii_lowercase();
    let is_html = html
        || lower.ends_with(".html")
        || lower.ends_with(".htm")
        || head.starts_with("<!doctype html")
        || head.starts_with("<html");
    let mut payload = if is_html {
        SharePayload::raw_html(text)
    } else {
        SharePayload::markdown(text)
    };
    if let Some(file) = annotations {
        let review = annotations::parse(&read_input(file)?)?;
        payload.annotations = review.annotations;
        payload.global_attachments = review.global_attachments;
    }
    Ok(payload)
}

/// The version input for `payload`: its ciphertext and digest (of the
/// markdown, or of the HTML document for an HTML share).
fn version_input(key: &ShareKey, payload: &SharePayload) -> Result<wire::VersionInput, CliError> {
    let digested = match (&payload.html, payload.is_html()) {
        (Some(html), true) => html.as_str(),
        _ => payload.plan.as_str(),
    };
    Ok(wire::VersionInput {
        data: seal(key, &payload.to_json())?,
        digest: plan_digest(key, digested),
    })
}

/// A comment set's plaintext: `{"v": version, "a": [tuples], "g"?: […]}`.
pub fn comment_set_json(
    version: u64,
    annotations: &[Annotation],
    global: &[ImageAttachment],
) -> String {
    let version = i64::try_from(version).unwrap_or(i64::MAX);
    let mut fields = vec![
        ("v", Json::Int(version)),
        ("a", to_shareable(annotations, TupleLayout::Current)),
    ];
    if !global.is_empty() {
        fields.push(("g", to_shareable_images(global, TupleLayout::Current)));
    }
    Json::Object(fields).stringify()
}

/// Reads a decrypted comment set (or decision feedback).
fn parse_comment_set(json: &str) -> Result<(Vec<Annotation>, Vec<ImageAttachment>), CliError> {
    let value: Value = serde_json::from_str(json)
        .map_err(|e| CliError::ReviewService(format!("a comment set is not JSON: {e}")))?;
    let payload = SharePayload::from_value(&value)
        .map_err(|e| CliError::ReviewService(format!("a comment set does not read: {e}")))?;
    Ok((payload.annotations, payload.global_attachments))
}

/// The version a decrypted comment set says it was made on (`"v"`).
fn comment_set_version(json: &str) -> Option<u64> {
    serde_json::from_str::<Value>(json)
        .ok()?
        .get("v")
        .and_then(Value::as_u64)
}

/// Who wrote an annotation of a review, and on which version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The writer as the export names it: a reviewer's name, or "the
    /// owner (name)".
    pub label: String,
    /// The version it was made on.
    pub version: u64,
    /// Where it came from.
    pub part: Part,
}

/// The part of a review an annotation came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The version itself (the owner's `--annotations`).
    Version,
    /// A writer's comment set.
    Comments,
    /// The decision's feedback.
    Decision,
}

/// The owner's decision, as the export states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionNote {
    /// "the owner" or "the owner (name)".
    pub by: String,
    /// `approved` or `changes_requested`.
    pub decision: String,
}

/// The latest version with every writer's annotations merged in.
pub struct Merged {
    /// The plan of the latest version; each annotation's author is its
    /// writer's name (the version's own annotations keep theirs).
    pub payload: SharePayload,
    /// Per annotation of `payload`: who wrote it, on which version.
    pub sources: Vec<Source>,
    /// The latest version's number.
    pub latest: u64,
    /// The decision, once made.
    pub decision: Option<DecisionNote>,
    /// The review's threads.
    pub threads: Vec<plan_doc::Thread>,
}

/// The latest version (`latest`, when already read) with every writer's
/// annotations merged in, the decision's feedback included. A set that
/// does not decrypt is skipped with a warning naming its writer.
pub async fn merged(
    linked: &Linked,
    view: &wire::ReviewView,
    latest: Option<SharePayload>,
) -> Result<Merged, CliError> {
    let mut payload = match latest {
        Some(payload) => payload,
        None => linked.latest(view).await?,
    };
    let owner = owner_label(view);
    let mut sources: Vec<Source> = payload
        .annotations
        .iter()
        .map(|_| Source {
            label: owner.clone(),
            version: view.latest,
            part: Part::Version,
        })
        .collect();
    let mut sets: Vec<(String, String, u64, Part, &str)> = view
        .comments
        .iter()
        .map(|c| {
            let label = if c.writer == "owner" {
                owner.clone()
            } else {
                c.name.clone()
            };
            (
                c.name.clone(),
                label,
                c.version,
                Part::Comments,
                c.data.as_str(),
            )
        })
        .collect();
    if let Some(decision) = &view.decision
        && let Some(data) = decision.data.as_deref()
    {
        let (name, label) = match decision.by.role.as_str() {
            "owner" => (owner_name(view), owner.clone()),
            _ => {
                let name = decision.by.name.clone().unwrap_or_default();
                (name.clone(), format!("the approver ({name})"))
            }
        };
        sets.push((name, label, decision.version, Part::Decision, data));
    }
    for (name, label, version, part, data) in sets {
        let opened = unseal(&linked.key, data).and_then(|json| {
            let version = comment_set_version(&json).unwrap_or(version);
            parse_comment_set(&json).map(|(a, g)| (a, g, version))
        });
        match opened {
            Ok((annotations, global, version)) => {
                for mut annotation in annotations {
                    annotation.author = Some(name.clone());
                    // The portal sends the decider's own comments again
                    // with the decision: said once, as their comment.
                    let repeated = part == Part::Decision
                        && payload.annotations.iter().zip(&sources).any(|(a, s)| {
                            s.part == Part::Comments
                                && a.author == annotation.author
                                && a.kind == annotation.kind
                                && a.original_text == annotation.original_text
                                && a.text == annotation.text
                        });
                    if repeated {
                        continue;
                    }
                    payload.annotations.push(annotation);
                    sources.push(Source {
                        label: label.clone(),
                        version,
                        part,
                    });
                }
                payload.global_attachments.extend(global);
            }
            Err(error) => warn(&format!(
                "{}'s comments cannot be read ({error}); skipped",
                safe_text(&name)
            )),
        }
    }
    Ok(Merged {
        payload,
        sources,
        latest: view.latest,
        decision: view.decision.as_ref().map(|d| DecisionNote {
            by: decider_label(view, d),
            decision: d.decision.clone(),
        }),
        threads: threads::of_view(linked, view),
    })
}

/// Who made `decision`, as the export names them: the owner as
/// [`owner_label`] does, an approver as "the approver (name)".
pub(crate) fn decider_label(view: &wire::ReviewView, decision: &wire::DecisionInfo) -> String {
    match (decision.by.role.as_str(), decision.by.name.as_deref()) {
        ("owner", _) => owner_label(view),
        (_, Some(name)) => format!("the approver ({})", safe_text(name)),
        (_, None) => "an approver".to_owned(),
    }
}

/// The rounds of a review that has had a decision, as `open` says them on
/// stderr: each decision (who, on which version, voided by which push) and
/// where the current round stands. Empty before the first decision.
fn rounds_block(view: &wire::ReviewView) -> String {
    if view.decisions.is_empty() {
        return String::new();
    }
    let mut out = String::from("Rounds:\n");
    for d in &view.decisions {
        let what = if d.decision == "approved" {
            "approved"
        } else {
            "changes requested"
        };
        let voided = d
            .voided_by
            .map(|n| format!(" (voided by the push of v{n})"))
            .unwrap_or_default();
        out.push_str(&format!(
            "- Round {}: {what} on v{} by {}{voided}\n",
            d.round,
            d.version,
            decider_label(view, d)
        ));
    }
    if view.decisions.last().is_none_or(|d| d.round < view.round) {
        out.push_str(&format!(
            "- Round {}: open, waiting for a decision on v{}\n",
            view.round, view.latest
        ));
    }
    out
}

/// The owner as the export names it: "the owner (name)" once it bound a
/// name, else "the owner".
pub(crate) fn owner_label(view: &wire::ReviewView) -> String {
    match bound_owner_name(view) {
        Some(name) => format!("the owner ({name})"),
        None => "the owner".to_owned(),
    }
}

/// The name the owner bound with comments, if it did.
fn bound_owner_name(view: &wire::ReviewView) -> Option<String> {
    view.comments
        .iter()
        .find(|c| c.writer == "owner")
        .map(|c| c.name.clone())
        .or_else(|| {
            (view.you.role == "owner")
                .then(|| view.you.name.clone())
                .flatten()
        })
}

/// The owner's name: the one it bound with comments, else "owner".
fn owner_name(view: &wire::ReviewView) -> String {
    bound_owner_name(view).unwrap_or_else(|| "owner".to_owned())
}

/// The number of annotations in `writer`'s comment set, decrypted.
pub fn count_annotations(key: &ShareKey, data: &str) -> Result<usize, CliError> {
    parse_comment_set(&unseal(key, data)?).map(|(a, _)| a.len())
}

pub(crate) fn warn(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "planshare: {message}");
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StartOutput {
    id: String,
    owner: String,
    /// The reviewer links, as before `links` was added.
    reviewers: Vec<String>,
    /// When the review expires (Unix milliseconds).
    expires_at: u64,
    /// Each reviewer link with its id (for `review links --revoke`).
    links: Vec<LinkOutput>,
}

#[derive(Serialize)]
struct LinkOutput {
    id: String,
    role: String,
    url: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LinksOutput<'a> {
    id: &'a str,
    expires_at: u64,
    links: &'a [wire::LinkInfo],
}

/// Now, in Unix milliseconds.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `2026-05-08 12:00 UTC (in 7 days)` for an expiry at `expires_ms`.
fn expiry_text(expires_ms: u64, now_ms: u64) -> String {
    let secs = expires_ms / 1000;
    let days = secs / 86_400;
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    let left = expires_ms.saturating_sub(now_ms);
    let plural = |n: u64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    let relative = if expires_ms <= now_ms {
        "already expired".to_owned()
    } else if left >= 86_400_000 {
        format!("in {}", plural((left + 43_200_000) / 86_400_000, "day"))
    } else if left >= 3_600_000 {
        format!("in {}", plural((left + 1_800_000) / 3_600_000, "hour"))
    } else {
        format!("in {}", plural(left.div_ceil(60_000), "minute"))
    };
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC ({relative})")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// What a new review is made of.
pub struct NewReview {
    /// Version 1.
    pub payload: SharePayload,
    /// Reviewer links to mint.
    pub reviewers: u32,
    /// Approver links to mint besides.
    pub approvers: u32,
    /// Lifetime in seconds (the server's default without).
    pub ttl: Option<u64>,
    /// The portal base for the links (`--share-url`).
    pub share_url: Option<String>,
    /// The Claude Code session the review belongs to (the hook's).
    pub session: Option<String>,
    /// A deadline, in seconds from now.
    pub deadline: Option<u64>,
    /// Seconds between reminders to the deciders.
    pub remind: Option<u64>,
    /// An ntfy-style topic the first approver link (else the owner's)
    /// subscribes, so the person who decides hears of new versions,
    /// reminders and the deadline.
    pub notify: Option<String>,
}

/// Creates a review and mints its links; answers the keyring entry for it
/// (not yet kept: see [`keep_new`]). A link the server refuses to mint
/// (too many) is said on stderr and the review goes on with fewer.
pub async fn create_review(
    new: NewReview,
    api: &ApiArgs,
    env: &Env,
) -> Result<keyring::Entry, CliError> {
    if let Some(why) = env.share_disabled() {
        return Err(CliError::ShareDisabled(why));
    }
    check_remind(new.remind)?;
    let key = ShareKey::generate().map_err(|e| CliError::Output(e.to_string()))?;
    let configured = api.configured(env);
    let client = api.client(env)?;
    let portal = portal_base(
        new.share_url.as_deref(),
        env,
        &configured,
        Some(&client),
        Purpose::Review,
    )
    .await?;
    let api = ReviewApi::new(client)?;
    let created = api
        .create(&wire::CreateReviewRequest {
            version: version_input(&key, &new.payload)?,
            ttl: new.ttl,
        })
        .await?;
    if !is_id(&created.id) {
        return Err(CliError::ReviewService(
            "the review API answered an id that is not 6-16 letters or digits".into(),
        ));
    }
    let owner = make_link(&portal, &created.id, &key, &created.owner_token, api.base())?;
    let mut links = Vec::new();
    let wanted = new.reviewers.saturating_add(new.approvers);
    let roles = (0..new.reviewers)
        .map(|_| "reviewer")
        .chain((0..new.approvers).map(|_| "approver"));
    for role in roles {
        match api.add_link(&created.id, &created.owner_token, role).await {
            Ok(link) => links.push(keyring::KeptLink {
                url: make_link(&portal, &created.id, &key, &link.token, api.base())?,
                id: link.id,
                role: link.role,
            }),
            Err(CliError::Rejected(why)) => {
                warn(&format!("minted {} of {wanted} links: {why}", links.len()));
                break;
            }
            Err(other) => {
                // The review exists: say so before failing, without its link.
                warn(&format!(
                    "review {} was created, but minting reviewer links failed",
                    created.id
                ));
                return Err(other);
            }
        }
    }
    if new.deadline.is_some() || new.remind.is_some() {
        let request = wire::ReviewDeadline {
            deadline: new.deadline.map(|secs| now_ms() + secs * 1000),
            remind_every: new.remind,
        };
        if let Err(error) = api
            .set_deadline(&created.id, &created.owner_token, &request)
            .await
        {
            warn(&format!(
                "review {} was created, but its deadline was not set: {error}",
                created.id
            ));
        }
    }
    if let Some(url) = &new.notify {
        let decider = links
            .iter()
            .find(|l| l.role == "approver")
            .and_then(|l| share_codec::parse_review_link(&l.url).ok())
            .and_then(|l| l.token)
            .unwrap_or_else(|| created.owner_token.clone());
        let request = api_types::notify::CreateSubscriptionRequest {
            kind: "ntfy".into(),
            url: url.clone(),
            events: None,
        };
        match api.subscribe(&created.id, &decider, &request).await {
            Ok(made) => warn(&format!(
                "{} hears of this review's changes ({})",
                safe_text(url),
                made.subscription.id
            )),
            Err(error) => warn(&format!(
                "review {} was created, but {} was not subscribed: {error}",
                created.id,
                safe_text(url)
            )),
        }
    }
    Ok(keyring::Entry {
        id: created.id,
        owner,
        links,
        expires_at: created.expires_at,
        session: new.session,
    })
}

/// Keeps a new review in the keyring, saying so on stderr (a keyring that
/// cannot be written is a warning: the links are printed anyway).
pub fn keep_new(env: &Env, entry: &keyring::Entry) {
    match keyring::save(env, entry) {
        Ok(_) => warn(&format!(
            "review {} is in your keyring: later commands take its id instead of the owner link (`planshare review list`)",
            entry.id
        )),
        Err(error) => warn(&format!("{error}; the review is not in your keyring")),
    }
}

async fn start(args: StartArgs, env: &Env) -> Result<String, CliError> {
    let payload = version_payload(&args.plan, args.html, args.annotations.as_deref())?;
    let new = NewReview {
        payload,
        reviewers: args.links,
        approvers: args.approvers,
        ttl: args.ttl,
        share_url: args.share_url,
        session: None,
        deadline: args.deadline,
        remind: args.remind,
        notify: None,
    };
    let entry = create_review(new, &args.api, env).await?;
    keep_new(env, &entry);
    let keyring::Entry {
        id,
        owner,
        links,
        expires_at,
        ..
    } = entry;
    if args.json {
        let output = StartOutput {
            id,
            owner,
            reviewers: links.iter().map(|l| l.url.clone()).collect(),
            expires_at,
            links: links
                .into_iter()
                .map(|l| LinkOutput {
                    id: l.id,
                    role: l.role,
                    url: l.url,
                })
                .collect(),
        };
        return json_line(&output);
    }
    let mut out = format!(
        "Review {id} (version 1), expires {}\n\nOwner link (keep it private: it pushes, decides and manages links):\n  {owner}\n",
        expiry_text(expires_at, now_ms())
    );
    if !links.is_empty() {
        out.push_str(
            "\nLinks (one per person; an approver's also decides; `review links OWNER_LINK --revoke ID` revokes one):\n",
        );
    }
    for link in &links {
        out.push_str(&format!(
            "  {}  {:<8}  {}\n",
            safe_text(&link.id),
            safe_text(&link.role),
            link.url
        ));
        if args.qr {
            out.push_str(&qr(&link.url)?);
        }
    }
    Ok(out)
}

/// `text` as a QR code in Unicode half blocks (dark on a light terminal
/// background is inverted, so it scans on dark terminals too).
fn qr(text: &str) -> Result<String, CliError> {
    use qrcode::render::unicode::Dense1x2;
    let code = qrcode::QrCode::new(text.as_bytes())
        .map_err(|e| CliError::Output(format!("cannot make a QR code: {e}")))?;
    let rendered = code
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .quiet_zone(true)
        .build();
    Ok(format!("{rendered}\n"))
}

async fn push(args: PushArgs, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.review, &args.api, env)?;
    let payload = version_payload(&args.plan, args.html, args.annotations.as_deref())?;
    // The new version is encrypted with the link's key: check that it opens
    // the review first, or nobody could read what is pushed.
    let Checked { view, .. } = linked.check(true).await?;
    if view.you.role != "owner" {
        return Err(CliError::Unauthorized(
            "only the review's owner can push: this is a reviewer link".into(),
        ));
    }
    if args.progress {
        let latest = linked.latest(&view).await?;
        if !plan_doc::only_checklist_marks_differ(&latest.plan, &payload.plan) {
            return Err(CliError::Input(format!(
                "--progress: this plan changes more than checklist marks since v{}; push it without --progress (it opens a new round, and voids an approval)",
                view.latest
            )));
        }
    }
    let pushed = push_payload(&linked, &view, &payload, args.progress).await?;
    Ok(if pushed.unchanged == Some(true) {
        format!("unchanged (v{})\n", pushed.n)
    } else {
        let round = pushed.round.unwrap_or(view.round);
        let what = if round > view.round {
            match view.state.as_str() {
                "approved" => format!(
                    ", round {round}: the approval of round {} is void",
                    view.round
                ),
                _ => format!(", round {round}"),
            }
        } else if args.progress && view.state == "approved" {
            ", progress: still approved".to_owned()
        } else {
            String::new()
        };
        format!("v{}{what}\n", pushed.n)
    })
}

/// Pushes `payload` as the version after `view`'s latest (the owner's
/// link), sealed with the link's key.
pub async fn push_payload(
    linked: &Linked,
    view: &wire::ReviewView,
    payload: &SharePayload,
    progress: bool,
) -> Result<wire::PushVersionResponse, CliError> {
    let input = version_input(&linked.key, payload)?;
    linked
        .api
        .push(
            &linked.id,
            &linked.token,
            &wire::PushVersionRequest {
                data: input.data,
                digest: input.digest,
                parent: view.latest,
                progress,
            },
        )
        .await
}

async fn links(args: LinksArgs, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    // A new link carries the key: check that it opens the review first.
    let Checked { view, .. } = linked.check(args.add).await?;
    if args.add {
        let role = if args.approver {
            "approver"
        } else {
            "reviewer"
        };
        let created = linked.api.add_link(&linked.id, &linked.token, role).await?;
        let link = linked.link_with(&created.token)?;
        keep_links(env, &linked.id, |links| {
            links.push(keyring::KeptLink {
                id: created.id.clone(),
                role: created.role.clone(),
                url: link.clone(),
            });
        });
        if args.json {
            return json_line(&LinkOutput {
                id: created.id,
                role: created.role,
                url: link,
            });
        }
        return Ok(format!(
            "{}  {}  {link}\n",
            safe_text(&created.id),
            safe_text(&created.role)
        ));
    }
    if let Some(link) = &args.revoke {
        if !is_id(link) {
            return Err(CliError::Usage(
                "--revoke takes a link id (6-16 letters or digits, as `review links` lists them)"
                    .into(),
            ));
        }
        linked.api.revoke(&linked.id, &linked.token, link).await?;
        keep_links(env, &linked.id, |links| {
            links.retain(|kept| kept.id != *link)
        });
        return Ok(format!("revoked {link}\n"));
    }
    let Some(links) = &view.links else {
        return Err(CliError::Unauthorized(
            "only the review's owner can list links: this is a reviewer link".into(),
        ));
    };
    if args.json {
        return json_line(&LinksOutput {
            id: &view.id,
            expires_at: view.expires_at,
            links,
        });
    }
    warn(&format!(
        "review {} expires {}",
        safe_text(&view.id),
        expiry_text(view.expires_at, now_ms())
    ));
    let mut out = String::new();
    for link in links {
        let name = link.name.as_deref().map_or_else(
            || "(no comments yet)".to_owned(),
            |n| safe_text(n).into_owned(),
        );
        out.push_str(&format!(
            "{}  {}  {name}\n",
            safe_text(&link.id),
            safe_text(&link.role)
        ));
    }
    Ok(out)
}

/// Reminders a minute to 30 days apart, as the server takes them.
fn check_remind(remind: Option<u64>) -> Result<(), CliError> {
    match remind {
        Some(secs) if !(60..=2_592_000).contains(&secs) => Err(CliError::Usage(
            "--remind must be a minute to 30 days (`30m`, `1h`, `1d`)".into(),
        )),
        _ => Ok(()),
    }
}

async fn deadline(args: DeadlineArgs, env: &Env) -> Result<String, CliError> {
    check_remind(args.remind)?;
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    let request = wire::ReviewDeadline {
        deadline: args.within.map(|secs| now_ms() + secs * 1000),
        remind_every: args.remind,
    };
    let set = linked
        .api
        .set_deadline(&linked.id, &linked.token, &request)
        .await?;
    let mut out = match set.deadline {
        Some(at) => format!(
            "review {}: a decision is due {}",
            safe_text(&linked.id),
            expiry_text(at, now_ms())
        ),
        None => format!("review {}: no deadline", safe_text(&linked.id)),
    };
    match set.remind_every {
        Some(secs) => out.push_str(&format!(
            "; the deciders are reminded every {}\n",
            hook_duration(secs)
        )),
        None => out.push_str("; no reminders\n"),
    }
    Ok(out)
}

/// `3600` as `1h`, `90` as `90s`.
fn hook_duration(secs: u64) -> String {
    match secs {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

async fn decide(args: DecideArgs, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    let decision = if args.approve {
        "approved"
    } else {
        "changes_requested"
    };
    let feedback = match &args.feedback {
        None => None,
        Some(file) => Some(feedback_annotations(&read_input(file)?)?),
    };
    // Feedback is encrypted with the link's key: check that it opens the
    // review first.
    let Checked { view, .. } = linked.check(feedback.is_some()).await?;
    if view.you.role == "reviewer" {
        return Err(CliError::Unauthorized(
            "only the review's owner or an approver link can decide: this is a reviewer link"
                .into(),
        ));
    }
    let version = args.version.unwrap_or(view.latest);
    // The first written line of the feedback, for notifications.
    let preview = feedback
        .as_ref()
        .and_then(|(annotations, _)| annotations.iter().find_map(|a| a.text.clone()))
        .map(|text| seal_preview(&linked.key, &text))
        .transpose()?;
    let data = match feedback {
        None => None,
        Some((annotations, global)) => Some(seal(
            &linked.key,
            &comment_set_json(version, &annotations, &global),
        )?),
    };
    let decided = linked
        .api
        .decide(
            &linked.id,
            &linked.token,
            &wire::DecisionRequest {
                decision: decision.to_owned(),
                version,
                name: args.name.clone(),
                data,
                sealed: preview,
            },
        )
        .await?;
    let what = match decided.decision.as_str() {
        "approved" => "approved",
        _ => "changes requested",
    };
    Ok(format!(
        "{what} v{} (round {})\n",
        decided.version, decided.round
    ))
}

/// Changes the links the keyring keeps for review `id`, when it keeps the
/// review (a failure is a warning: the link itself was made or revoked).
fn keep_links(env: &Env, id: &str, change: impl FnOnce(&mut Vec<keyring::KeptLink>)) {
    let kept = keyring::update(env, id, |entry| change(&mut entry.links));
    if let Err(error) = kept {
        warn(&format!(
            "{error}; the keyring's copy of the links is not updated"
        ));
    }
}

/// Feedback text: annotations JSON as `share --annotations` takes it (or a
/// comment set `{"v","a"}`), else plain text as one global comment.
fn feedback_annotations(text: &str) -> Result<(Vec<Annotation>, Vec<ImageAttachment>), CliError> {
    if serde_json::from_str::<Value>(text).is_ok() {
        let review = annotations::parse(text)?;
        return Ok((review.annotations, review.global_attachments));
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(CliError::Input("the feedback file is empty".into()));
    }
    Ok((
        vec![Annotation {
            kind: Some(AnnotationType::GlobalComment),
            text: Some(text.to_owned()),
            ..Annotation::default()
        }],
        Vec::new(),
    ))
}

/// `planshare open` of a review link: the latest version with every
/// writer's comments, as `format`.
pub async fn open(
    link: &str,
    format: Format,
    api: &ApiArgs,
    env: &Env,
) -> Result<String, CliError> {
    let linked = Linked::from_link(link, api, env)?;
    let Checked { view, latest } = linked.check(true).await?;
    let merged = merged(&linked, &view, latest).await?;
    match format {
        Format::Feedback => {
            // The rounds go to stderr, as `watch` says them: stdout stays
            // the export an agent reads, the same as `watch` prints.
            let rounds = rounds_block(&view);
            if !rounds.is_empty() {
                use std::io::Write as _;
                let _ = std::io::stderr().write_all(rounds.as_bytes());
            }
            Ok(export::feedback(&merged))
        }
        Format::Markdown => {
            crate::open::render(&merged.payload, Some(&linked.id), "review", format, None)
        }
        Format::Json => {
            // What the plan alone does not say: the round, every decision
            // (who made it, on which version; its text is in the
            // annotations) and the threads.
            let decisions: Vec<Value> = view
                .decisions
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "round": d.round, "version": d.version, "decision": d.decision,
                        "by": d.by, "decidedAt": d.decided_at, "voidedBy": d.voided_by,
                    })
                })
                .collect();
            let review = serde_json::json!({
                "state": view.state, "round": view.round, "latest": view.latest,
                "decisions": decisions, "threads": merged.threads,
            });
            let id = Some(linked.id.as_str());
            crate::open::render(&merged.payload, id, "review", format, Some(review))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_or_seconds() {
        assert_eq!(parse_duration("7d"), Ok(7 * 86_400));
        assert_eq!(parse_duration("12h"), Ok(43_200));
        assert_eq!(parse_duration("30m"), Ok(1_800));
        assert_eq!(parse_duration("90s"), Ok(90));
        assert_eq!(parse_duration("3600"), Ok(3_600));
        assert_eq!(parse_duration("2w"), Ok(1_209_600));
        for bad in [
            "",
            "0",
            "0h",
            "7x",
            "d",
            "-1",
            "1.5h",
            "99999999999999999999w",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn links_carry_paste_only_for_another_origin() {
        let key = ShareKey::from_bytes([3; 32]);
        let token = "t".repeat(43);
        let own = make_link(
            "http://127.0.0.1:9000",
            "abcdefgh",
            &key,
            &token,
            "http://127.0.0.1:9000",
        )
        .unwrap();
        assert!(!own.contains("paste="), "{own}");
        let other = make_link(
            "https://share.example",
            "abcdefgh",
            &key,
            &token,
            "http://127.0.0.1:9000",
        )
        .unwrap();
        assert!(other.contains("&paste="), "{other}");
        let parsed = share_codec::parse_review_link(&other).unwrap();
        assert_eq!(parsed.api.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(parsed.token.as_deref(), Some(token.as_str()));
        assert!(make_link("https://s", "abcdefgh", &key, "t\u{1b}[2J", "https://a").is_err());
        assert_eq!(
            origin_of("https://h.example/share").unwrap(),
            "https://h.example"
        );
    }

    #[test]
    fn a_link_without_a_token_is_refused_clearly() {
        let key = ShareKey::from_bytes([3; 32]).to_base64url();
        let link = format!("https://s.example/r/abcdefgh#key={key}");
        let error = Linked::from_link(&link, &ApiArgs::default(), &Env::default())
            .err()
            .unwrap();
        assert!(matches!(error, CliError::InvalidReviewLink(_)));
        assert!(error.to_string().contains("no token"), "{error}");
        assert!(!error.to_string().contains(&key));
    }

    #[test]
    fn damaged_links_and_upstreams_services_are_refused_before_any_request() {
        let key = ShareKey::from_bytes([3; 32]).to_base64url();
        let token = "t".repeat(43);
        let refused = |link: &str| {
            Linked::from_link(link, &ApiArgs::default(), &Env::default())
                .err()
                .unwrap()
        };
        let short_token = refused(&format!(
            "http://127.0.0.1:9/r/abcdefgh#key={key}&t={}",
            &token[..40]
        ));
        assert_eq!(short_token.exit_code(), 4);
        assert!(
            short_token
                .to_string()
                .starts_with("invalid review link: its token"),
            "{short_token}"
        );
        let bad_key = refused(&format!(
            "http://127.0.0.1:9/r/abcdefgh#key={}&t={token}",
            &key[..30]
        ));
        assert!(
            bad_key
                .to_string()
                .contains("the link is damaged; copy it again"),
            "{bad_key}"
        );
        let upstream = refused(&format!(
            "https://share.plannotator.ai/r/abcdefgh#key={key}&t={token}"
        ));
        assert!(matches!(upstream, CliError::NoReviewApi(_)), "{upstream}");
        assert!(
            upstream
                .to_string()
                .starts_with("the paste service at https://share.plannotator.ai has no review API"),
            "{upstream}"
        );
        for error in [short_token, bad_key, upstream] {
            assert!(!error.to_string().contains(&key));
            assert!(!error.to_string().contains(&token));
        }
    }

    #[test]
    fn expiry_is_an_absolute_utc_time_and_how_long_is_left() {
        // 2026-05-08 12:00:00 UTC.
        let at = 1_778_241_600_000;
        let day = 86_400_000;
        assert_eq!(
            expiry_text(at, at - 7 * day + 5_000),
            "2026-05-08 12:00 UTC (in 7 days)"
        );
        assert_eq!(expiry_text(at, at - day), "2026-05-08 12:00 UTC (in 1 day)");
        assert_eq!(
            expiry_text(at, at - 5 * 3_600_000),
            "2026-05-08 12:00 UTC (in 5 hours)"
        );
        assert_eq!(
            expiry_text(at, at - 90_000),
            "2026-05-08 12:00 UTC (in 2 minutes)"
        );
        assert_eq!(
            expiry_text(at, at + 1),
            "2026-05-08 12:00 UTC (already expired)"
        );
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn comment_sets_round_trip_and_feedback_text_becomes_a_global_comment() {
        let (annotations, _) = feedback_annotations(r#"[["C","Body","why","me",null]]"#).unwrap();
        let json = comment_set_json(2, &annotations, &[]);
        assert_eq!(json, r#"{"v":2,"a":[["C","Body","why","me",null]]}"#);
        let (back, global) = parse_comment_set(&json).unwrap();
        assert_eq!(back.len(), 1);
        assert!(global.is_empty());
        let (text, _) = feedback_annotations("Please split step 2.\n").unwrap();
        assert_eq!(text[0].kind, Some(AnnotationType::GlobalComment));
        assert_eq!(text[0].text.as_deref(), Some("Please split step 2."));
        let key = ShareKey::from_bytes([5; 32]);
        let sealed = seal(&key, &json).unwrap();
        assert_eq!(count_annotations(&key, &sealed).unwrap(), 1);
        assert!(matches!(
            count_annotations(&ShareKey::from_bytes([6; 32]), &sealed),
            Err(CliError::Decrypt)
        ));
    }
}

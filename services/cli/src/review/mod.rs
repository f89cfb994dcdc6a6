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
pub mod sse;
mod watch;

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
    /// Approve or request changes (owner link), with optional feedback.
    Decide(DecideArgs),
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
    /// Lifetime of the review: `7d`, `12h`, `30m`, `90s` or seconds
    /// [default: the server's default paste lifetime].
    #[arg(long, value_parser = parse_duration)]
    ttl: Option<u64>,
    /// Print `{"id","owner","reviewers":[…]}` as JSON.
    #[arg(long)]
    json: bool,
    /// Also print each reviewer link as a QR code (terminal).
    #[arg(long)]
    qr: bool,
    /// Treat the input as a raw HTML document.
    #[arg(long)]
    html: bool,
    /// Portal base for the links [default: $PLANNOTATOR_SHARE_URL, else https://share.plannotator.ai].
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
    /// Revoke the reviewer link with this id.
    #[arg(long, value_name = "ID")]
    revoke: Option<String>,
    #[command(flatten)]
    api: ApiArgs,
}

/// Arguments of `review decide`.
#[derive(Args)]
pub struct DecideArgs {
    /// The owner link.
    link: String,
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
        let parsed = share_codec::parse_review_link(link).map_err(link_error)?;
        let ReviewLink {
            base,
            id,
            key,
            token,
            api: named,
        } = parsed;
        let key = ShareKey::parse(&key).map_err(|e| match e {
            CodecError::InvalidKey(why) => {
                CliError::InvalidLink(format!("the review link's key is invalid: {why}"))
            }
            other => CliError::InvalidLink(other.to_string()),
        })?;
        let token = token.ok_or_else(|| {
            CliError::InvalidLink(
                "the review link has no token (&t=…): it cannot be used; ask the review's owner for a reviewer link"
                    .into(),
            )
        })?;
        let api_base = match (&api.paste_url, named) {
            (Some(chosen), _) => chosen.clone(),
            (None, Some(named)) => named,
            (None, None) => origin_of(&base)?,
        };
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

    /// A link to this review with `token`, for the same portal and API.
    pub fn link_with(&self, token: &str) -> Result<String, CliError> {
        make_link(&self.base, &self.id, &self.key, token, self.api.base())
    }
}

/// The origin (`scheme://host[:port]`) of a portal base.
fn origin_of(base: &str) -> Result<String, CliError> {
    let url = url::Url::parse(base)
        .map_err(|e| CliError::InvalidLink(format!("the review link's address is invalid: {e}")))?;
    match url.origin() {
        origin @ url::Origin::Tuple(..) => Ok(origin.ascii_serialization()),
        url::Origin::Opaque(_) => Err(CliError::InvalidLink(
            "the review link's address has no host".into(),
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
        return Err(CliError::Service(
            "the review API answered a token that is not 43 base64url characters".into(),
        ));
    }
    let own = origin_of(portal).is_ok_and(|origin| origin == api);
    Ok(review_url(portal, id, key, token, (!own).then_some(api)))
}

fn link_error(error: CodecError) -> CliError {
    match error {
        CodecError::InvalidLink(message) => CliError::InvalidLink(message),
        other => CliError::InvalidLink(format!("bad &paste= value: {other}")),
    }
}

/// A review or link id: 6–16 ASCII letters or digits.
fn is_id(id: &str) -> bool {
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

/// Decrypts and inflates a review `data` field to its JSON text.
fn unseal(key: &ShareKey, data: &str) -> Result<String, CliError> {
    let compressed = decrypt(data, &key.to_base64url()).map_err(|e| match e {
        CodecError::DecryptFailed
        | CodecError::CiphertextTooShort { .. }
        | CodecError::InvalidUtf8
        | CodecError::InvalidBase64(_) => CliError::Decrypt,
        other => CliError::InvalidLink(other.to_string()),
    })?;
    decompress(&compressed, MAX_INFLATED_BYTES)
        .map_err(|e| CliError::InvalidLink(format!("the review's data does not decode: {e}")))
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
        .map_err(|e| CliError::InvalidLink(format!("a comment set is not JSON: {e}")))?;
    let payload = SharePayload::from_value(&value)
        .map_err(|e| CliError::InvalidLink(format!("a comment set does not read: {e}")))?;
    Ok((payload.annotations, payload.global_attachments))
}

/// The plan of the latest version with every writer's annotations merged
/// in (each annotation's author: the writer's name), the decision's
/// feedback included. A set that does not decrypt is skipped with a
/// warning naming its writer.
pub async fn merged_payload(
    linked: &Linked,
    view: &wire::ReviewView,
) -> Result<SharePayload, CliError> {
    let latest = linked
        .api
        .version(&linked.id, &linked.token, view.latest)
        .await?;
    let mut payload = SharePayload::from_json(&unseal(&linked.key, &latest.data)?)
        .map_err(|e| CliError::InvalidLink(format!("the version does not read: {e}")))?;
    let mut sets: Vec<(String, &str)> = view
        .comments
        .iter()
        .map(|c| (c.name.clone(), c.data.as_str()))
        .collect();
    if let Some(data) = view.decision.as_ref().and_then(|d| d.data.as_deref()) {
        sets.push((owner_name(view), data));
    }
    for (name, data) in sets {
        let opened = unseal(&linked.key, data).and_then(|json| parse_comment_set(&json));
        match opened {
            Ok((annotations, global)) => {
                payload
                    .annotations
                    .extend(annotations.into_iter().map(|mut a| {
                        a.author = Some(name.clone());
                        a
                    }));
                payload.global_attachments.extend(global);
            }
            Err(error) => warn(&format!(
                "{}'s comments cannot be read ({error}); skipped",
                safe_text(&name)
            )),
        }
    }
    Ok(payload)
}

/// The owner's name: the one it bound with comments, else "owner".
fn owner_name(view: &wire::ReviewView) -> String {
    view.comments
        .iter()
        .find(|c| c.writer == "owner")
        .map(|c| c.name.clone())
        .or_else(|| {
            (view.you.role == "owner")
                .then(|| view.you.name.clone())
                .flatten()
        })
        .unwrap_or_else(|| "owner".to_owned())
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
struct StartOutput {
    id: String,
    owner: String,
    reviewers: Vec<String>,
}

async fn start(args: StartArgs, env: &Env) -> Result<String, CliError> {
    if let Some(why) = env.share_disabled() {
        return Err(CliError::ShareDisabled(why));
    }
    let payload = version_payload(&args.plan, args.html, args.annotations.as_deref())?;
    let key = ShareKey::generate().map_err(|e| CliError::Output(e.to_string()))?;
    let portal = args.share_url.clone().unwrap_or_else(|| env.share_url());
    let api = ReviewApi::new(args.api.client(env)?)?;
    let created = api
        .create(&wire::CreateReviewRequest {
            version: version_input(&key, &payload)?,
            ttl: args.ttl,
        })
        .await?;
    if !is_id(&created.id) {
        return Err(CliError::Service(
            "the review API answered an id that is not 6-16 letters or digits".into(),
        ));
    }
    let owner = make_link(&portal, &created.id, &key, &created.owner_token, api.base())?;
    let mut reviewers = Vec::new();
    for _ in 0..args.links {
        match api.add_link(&created.id, &created.owner_token).await {
            Ok(link) => reviewers.push((
                link.id,
                make_link(&portal, &created.id, &key, &link.token, api.base())?,
            )),
            Err(CliError::Rejected(why)) => {
                warn(&format!(
                    "minted {} of {} reviewer links: {why}",
                    reviewers.len(),
                    args.links
                ));
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
    if args.json {
        let output = StartOutput {
            id: created.id,
            owner,
            reviewers: reviewers.into_iter().map(|(_, link)| link).collect(),
        };
        return json_line(&output);
    }
    let mut out = format!(
        "Review {} (version 1)\n\nOwner link (keep it private: it pushes, decides and manages links):\n  {owner}\n",
        created.id
    );
    if !reviewers.is_empty() {
        out.push_str("\nReviewer links (one per reviewer):\n");
    }
    for (id, link) in &reviewers {
        out.push_str(&format!("  {}  {link}\n", safe_text(id)));
        if args.qr {
            out.push_str(&qr(link)?);
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
    let view = linked.view().await?;
    if view.you.role != "owner" {
        return Err(CliError::Unauthorized(
            "only the review's owner can push: this is a reviewer link".into(),
        ));
    }
    let input = version_input(&linked.key, &payload)?;
    let pushed = linked
        .api
        .push(
            &linked.id,
            &linked.token,
            &wire::PushVersionRequest {
                data: input.data,
                digest: input.digest,
                parent: view.latest,
            },
        )
        .await?;
    Ok(if pushed.unchanged == Some(true) {
        format!("unchanged (v{})\n", pushed.n)
    } else {
        format!("v{}\n", pushed.n)
    })
}

async fn links(args: LinksArgs, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    if args.add {
        let created = linked.api.add_link(&linked.id, &linked.token).await?;
        return Ok(format!(
            "{}  {}\n",
            safe_text(&created.id),
            linked.link_with(&created.token)?
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
        return Ok(format!("revoked {link}\n"));
    }
    let view = linked.view().await?;
    let Some(links) = view.links else {
        return Err(CliError::Unauthorized(
            "only the review's owner can list links: this is a reviewer link".into(),
        ));
    };
    let mut out = String::new();
    for link in links {
        let name = link.name.as_deref().map_or_else(
            || "(no comments yet)".to_owned(),
            |n| safe_text(n).into_owned(),
        );
        out.push_str(&format!("{}  {name}\n", safe_text(&link.id)));
    }
    Ok(out)
}

async fn decide(args: DecideArgs, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    let decision = if args.approve {
        "approved"
    } else {
        "changes_requested"
    };
    let data = match &args.feedback {
        None => None,
        Some(file) => {
            let text = read_input(file)?;
            let view = linked.view().await?;
            let (annotations, global) = feedback_annotations(&text)?;
            Some(seal(
                &linked.key,
                &comment_set_json(view.latest, &annotations, &global),
            )?)
        }
    };
    let decided = linked
        .api
        .decide(
            &linked.id,
            &linked.token,
            &wire::DecisionRequest {
                decision: decision.to_owned(),
                data,
            },
        )
        .await?;
    Ok(match decided.decision.as_str() {
        "approved" => "approved\n".to_owned(),
        _ => "changes requested\n".to_owned(),
    })
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
    let view = linked.view().await?;
    let payload = merged_payload(&linked, &view).await?;
    crate::open::render(&payload, Some(&linked.id), "review", format)
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
        assert!(matches!(error, CliError::InvalidLink(_)));
        assert!(error.to_string().contains("no token"), "{error}");
        assert!(!error.to_string().contains(&key));
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

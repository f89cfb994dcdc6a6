//! `planshare share`: a plan (and annotations) → a link.
//!
//! `--auto` (the default) makes a hash link — nothing stored anywhere — unless
//! it would exceed 2048 characters or the input is a raw HTML document; then
//! it stores the payload, encrypted with a fresh key, through the paste API
//! and prints a short link whose `#key=` never leaves this machine.

use clap::Args;
use serde::Serialize;
use share_codec::{SharePayload, compress, encrypt, format_size, hash_url, short_url};

use crate::annotations;
use crate::discovery::{Purpose, portal_base};
use crate::env::Env;
use crate::error::CliError;
use crate::open::MAX_INFLATED_BYTES;
use crate::paste::{ApiArgs, read_input};
use crate::terminal::json_line;

/// Upstream offers a short link once the hash link passes this length.
pub const HASH_LINK_LIMIT: usize = 2048;

/// Arguments of `planshare share`.
#[derive(Args)]
pub struct ShareArgs {
    /// The plan: a markdown file, or an HTML document (`.html`/`.htm`, or
    /// `--html`); `-` reads standard input.
    #[arg(default_value = "-")]
    file: String,
    /// Annotations to include (JSON: upstream annotation objects, or tuples).
    #[arg(long, value_name = "FILE.json")]
    annotations: Option<String>,
    /// Always a hash link (the payload in the URL; nothing is stored).
    #[arg(long, group = "kind")]
    hash: bool,
    /// Always an encrypted short link through the paste API.
    #[arg(long, group = "kind")]
    short: bool,
    /// A hash link, or a short link when the hash link would exceed 2048
    /// characters or the input is HTML (the default).
    #[arg(long, group = "kind")]
    auto: bool,
    /// Treat the input as a raw HTML document.
    #[arg(long)]
    html: bool,
    /// Portal base for the link [default: $PLANNOTATOR_SHARE_URL, else the
    /// portal the paste server's discovery names, else https://share.plannotator.ai].
    #[arg(long)]
    share_url: Option<String>,
    /// Print `{url, kind, id, sizeBytes, …}` as JSON instead of the bare link.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    api: ApiArgs,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShareOutput {
    url: String,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    size_bytes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    delete_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
}

/// Runs `share`; returns what to print on stdout. In a remote session the
/// upstream hand-off text goes to stderr as well.
pub async fn run(args: ShareArgs, env: &Env) -> Result<String, CliError> {
    if let Some(why) = env.share_disabled() {
        return Err(CliError::ShareDisabled(why));
    }
    let text = read_input(&args.file)?;
    let is_html = args.html || is_html_file(&args.file) || looks_like_html(&text);
    let mut payload = if is_html {
        SharePayload::raw_html(text)
    } else {
        SharePayload::markdown(text)
    };
    if let Some(file) = &args.annotations {
        let review = annotations::parse(&read_input(file)?)?;
        payload.annotations = review.annotations;
        payload.global_attachments = review.global_attachments;
    }
    let (verb, noun) = if is_html {
        ("annotate", "HTML document only")
    } else {
        ("review the plan", "plan only")
    };
    let result = make_link(&args, env, &payload).await;
    if env.is_remote() {
        report_remote(&result, verb, noun, payload.annotations.len());
    }
    let output = result?;
    if args.json {
        json_line(&output)
    } else {
        Ok(output.url + "\n")
    }
}

async fn make_link(
    args: &ShareArgs,
    env: &Env,
    payload: &SharePayload,
) -> Result<ShareOutput, CliError> {
    if args.hash && payload.is_html() {
        return Err(CliError::Usage(
            "a raw HTML document has no hash form: use --short (or --auto)".into(),
        ));
    }
    // What `open` (and the portal) inflate: a larger payload would make a
    // link that no reader opens.
    let json = payload.to_json();
    if json.len() > MAX_INFLATED_BYTES {
        return Err(CliError::TooLarge(format!(
            "the plan and its annotations are {} bytes as JSON; links are limited to {} bytes ({} MiB) of it, the most `planshare open` and the portal read",
            json.len(),
            MAX_INFLATED_BYTES,
            MAX_INFLATED_BYTES / (1024 * 1024)
        )));
    }
    let compressed = compress(&json);
    drop(json);
    // The client for short links, and for asking the paste server where its
    // portal is; one that cannot be set up (plain HTTP refused, a bad URL)
    // fails only when a short link needs it.
    let client = args.api.client(env);
    let base = portal_base(
        args.share_url.as_deref(),
        env,
        &args.api.configured(env),
        client.as_ref().ok(),
        Purpose::Share,
    )
    .await?;
    if !args.short && !payload.is_html() {
        let url = hash_url(&base, &compressed);
        if args.hash || url.len() <= HASH_LINK_LIMIT {
            return Ok(ShareOutput {
                size_bytes: url.len(),
                url,
                kind: "hash",
                id: None,
                delete_token: None,
                expires_at: None,
            });
        }
    }
    let client = client?;
    let (key, data) = encrypt(&compressed).map_err(|e| CliError::Output(e.to_string()))?;
    let created = client.create(&data).await?;
    let url = short_url(&base, &created.id, &key, client.base());
    Ok(ShareOutput {
        size_bytes: url.len(),
        url,
        kind: "short",
        id: Some(created.id),
        delete_token: created.delete_token,
        expires_at: created.expires_at,
    })
}

/// The hand-off text upstream's hook prints in remote sessions, on stderr.
fn report_remote(
    result: &Result<ShareOutput, CliError>,
    verb: &str,
    noun: &str,
    annotations: usize,
) {
    let text = match result {
        Ok(output) => {
            let what = match annotations {
                0 => format!("{noun}, annotations added in browser"),
                1 => "plan with 1 annotation".to_owned(),
                n => format!("plan with {n} annotations"),
            };
            format!(
                "\n  Open this link on your local machine to {verb}:\n  {}\n\n  ({} \u{2014} {what})\n\n",
                output.url,
                format_size(output.url.len() as u64)
            )
        }
        Err(error) => {
            let html_hint = if noun.starts_with("HTML") {
                " HTML sharing uses the paste service; check PLANNOTATOR_PASTE_URL or try a smaller/self-contained HTML file."
            } else {
                ""
            };
            format!(
                "\n  Warning: could not create remote share link for {noun}.\n  {error}.{html_hint}\n\n"
            )
        }
    };
    eprint_raw(&text);
}

fn eprint_raw(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stderr().write_all(text.as_bytes());
}

fn is_html_file(file: &str) -> bool {
    let lower = file.to_ascii_lowercase();
    lower.ends_with(".html") || lower.ends_with(".htm")
}

fn looks_like_html(text: &str) -> bool {
    let head = text
        .trim_start()
        .get(..15)
        .unwrap_or("")
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

//! `planshare open <URL>`: any share link → the plan and its annotations,
//! re-found in the plan.
//!
//! Hash links decode locally. Short links are fetched from `--paste-url` when
//! given, else from the paste API the link names (`&paste=`), else from
//! `PLANNOTATOR_PASTE_URL`, and decrypted here with the fragment's key; the
//! key is never sent anywhere.

use clap::{Args, ValueEnum};
use plan_doc::{
    Anchor, DEFAULT_SEARCH_BUDGET, DEFAULT_SUBJECT, DEFAULT_TITLE, Reanchored, Steps,
    export_annotations, plan_steps, reanchor,
};
use serde::Serialize;
use share_codec::{
    Annotation, CodecError, ImageAttachment, ShareLink, SharePayload, decode_hash, decode_paste,
};

use crate::env::Env;
use crate::error::CliError;
use crate::paste::ApiArgs;
use crate::terminal::{json_pretty, safe_text};

/// The largest payload `open` inflates (a decompression bomb stops here); the
/// portal's limit too (`MAX_INFLATED` in `codec.js`). `share` refuses to make
/// a link to more.
pub const MAX_INFLATED_BYTES: usize = 64 * 1024 * 1024;

/// What `open` prints.
#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// Upstream's feedback export (what a coding agent reads).
    Feedback,
    /// The payload, with each annotation's block, lines, offsets and whether it was found.
    Json,
    /// The plan itself (the HTML document for HTML shares).
    Markdown,
}

/// Arguments of `planshare open`.
#[derive(Args)]
pub struct OpenArgs {
    /// A hash link (`…/#<data>`), a short link (`…/p/<id>#key=…`) or a
    /// review link (`…/r/<id>#key=…&t=…`).
    url: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "feedback")]
    format: Format,
    #[command(flatten)]
    api: ApiArgs,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OpenOutput<'a> {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    title: String,
    plan: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    html: Option<&'a str>,
    global_attachments: &'a [ImageAttachment],
    annotations: Vec<AnnotationOutput<'a>>,
    /// Annotations not found, those not searched included.
    not_found: usize,
    /// Annotations not searched: the re-anchoring's search budget ran out.
    not_searched: usize,
    /// The plan's step progress (`plan_doc::plan_steps`, as the portal's
    /// meter shows it); `null` when the plan has no task items.
    steps: Option<Steps>,
    /// A review link's state, rounds, decisions and threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    review: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct AnnotationOutput<'a> {
    #[serde(flatten)]
    annotation: &'a Annotation,
    /// `null` for global comments and annotations on diff content (never placed).
    anchor: Option<&'a Anchor>,
}

impl OpenArgs {
    /// The link, when it is a review link (`main` sends those to
    /// `review::open`): its text, the format and the API arguments.
    pub fn review_link(&self) -> Option<(&str, Format, &ApiArgs)> {
        share_codec::is_review_link(&self.url).then_some((
            self.url.as_str(),
            self.format,
            &self.api,
        ))
    }
}

/// Runs `open` of a share link; returns what to print on stdout.
pub async fn run(args: OpenArgs, env: &Env) -> Result<String, CliError> {
    let link = share_codec::parse_share_link(&args.url).map_err(link_error)?;
    let (payload, id) = match &link {
        ShareLink::Hash { data, .. } => (
            decode_hash(data, MAX_INFLATED_BYTES).map_err(link_error)?,
            None,
        ),
        ShareLink::Short {
            id, key, paste_api, ..
        } => {
            // `--paste-url` wins over the link's `&paste=`; the API key goes
            // only to the configured API, never to one a link names.
            let base = match (&args.api.paste_url, paste_api) {
                (None, Some(named)) => named.clone(),
                _ => args.api.configured(env),
            };
            let data = args.api.client_for(&base, env)?.get(id).await?;
            let payload =
                decode_paste(&data, key.as_deref(), MAX_INFLATED_BYTES).map_err(paste_error)?;
            (payload, Some(id.as_str()))
        }
    };
    let kind = if id.is_some() { "short" } else { "hash" };
    render(&payload, id, kind, args.format, None)
}

/// `payload` as `format`; `kind` names the link in JSON (`hash`, `short`,
/// `review`).
pub(crate) fn render(
    payload: &SharePayload,
    id: Option<&str>,
    kind: &'static str,
    format: Format,
    review: Option<serde_json::Value>,
) -> Result<String, CliError> {
    match format {
        // The document alone: nothing to re-anchor.
        // Text formats carry the link author's text to a terminal: control
        // and invisible formatting characters are dropped
        // (`terminal::safe_text`); JSON escapes them.
        Format::Markdown => Ok(match (&payload.html, payload.is_html()) {
            (Some(html), true) => safe_text(html).into_owned(),
            _ => safe_text(&payload.plan).into_owned(),
        }),
        Format::Feedback => {
            let reanchored = reanchor(&payload.plan, &payload.annotations);
            if !payload.is_html()
                && let Some(warning) = not_found_warning(&reanchored, payload.annotations.len())
            {
                warn(&warning);
            }
            let feedback = export_annotations(
                &reanchored.blocks,
                &reanchored.annotations,
                &payload.global_attachments,
                DEFAULT_TITLE,
                DEFAULT_SUBJECT,
            );
            Ok(safe_text(&feedback).into_owned())
        }
        Format::Json => {
            let reanchored = reanchor(&payload.plan, &payload.annotations);
            let output = OpenOutput {
                kind,
                id,
                title: payload.title(),
                plan: &payload.plan,
                html: payload.html.as_deref(),
                global_attachments: &payload.global_attachments,
                annotations: reanchored
                    .annotations
                    .iter()
                    .zip(&reanchored.anchors)
                    .map(|(annotation, anchor)| AnnotationOutput {
                        annotation,
                        anchor: anchor.as_ref(),
                    })
                    .collect(),
                not_found: reanchored.not_found().count(),
                not_searched: reanchored.not_searched(),
                steps: plan_steps(&payload.plan),
                review,
            };
            json_pretty(&output)
        }
    }
}

/// What `open` says on stderr when some annotations were not found.
pub(crate) fn not_found_warning(reanchored: &Reanchored, total: usize) -> Option<String> {
    let not_found = reanchored.not_found().count();
    if not_found == 0 {
        return None;
    }
    let mut warning = format!(
        "{not_found} of {total} annotations could not be found in the plan (exported without line numbers)"
    );
    let not_searched = reanchored.not_searched();
    if not_searched > 0 {
        warning.push_str(&format!(
            "; {not_searched} of them were not searched: the search stopped after {} GiB of plan text",
            DEFAULT_SEARCH_BUDGET >> 30
        ));
    }
    Some(warning)
}

fn warn(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "planshare: {message}");
}

/// A link or hash payload that does not decode: truncated, mangled or not a share.
fn link_error(error: CodecError) -> CliError {
    CliError::InvalidLink(match error {
        CodecError::InvalidLink(message) => message,
        CodecError::TruncatedOrCorrupt | CodecError::InvalidBase64(_) => {
            format!("{error} (the link may have been truncated)")
        }
        other => other.to_string(),
    })
}

/// A stored paste that does not open: a wrong key, or not a share payload.
fn paste_error(error: CodecError) -> CliError {
    match error {
        CodecError::DecryptFailed
        | CodecError::CiphertextTooShort { .. }
        | CodecError::InvalidUtf8 => CliError::Decrypt,
        CodecError::InvalidKey(why) => {
            CliError::InvalidLink(format!("the link's key is invalid: {why}"))
        }
        other => CliError::InvalidLink(format!("the paste does not hold a share payload: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use share_codec::AnnotationType;

    #[test]
    fn the_warning_counts_annotations_not_found_and_not_searched() {
        let comment = |text: &str| Annotation {
            kind: Some(AnnotationType::Comment),
            original_text: text.to_owned(),
            ..Annotation::default()
        };
        // "gone" is ruled out without a search; "an!" and "la!" need one.
        let annotations = [
            comment("Plan"),
            comment("gone"),
            comment("an!"),
            comment("la!"),
        ];
        let all = reanchor("# Plan\n", &annotations);
        assert_eq!(
            not_found_warning(&all, 4).as_deref(),
            Some(
                "3 of 4 annotations could not be found in the plan (exported without line numbers)"
            )
        );
        let budgeted = plan_doc::reanchor_with_budget("# Plan\n", &annotations, 1);
        assert_eq!(
            not_found_warning(&budgeted, 4).as_deref(),
            Some(
                "3 of 4 annotations could not be found in the plan (exported without line numbers); 2 of them were not searched: the search stopped after 8 GiB of plan text"
            )
        );
        assert_eq!(
            not_found_warning(&reanchor("# Plan\n", &annotations[..1]), 1),
            None
        );
    }
}

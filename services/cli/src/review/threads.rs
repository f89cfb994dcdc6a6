//! Threads from the command line: `review threads`, `comment`, `reply`,
//! `resolve` and `reopen`. The threads live in each writer's encrypted
//! comment set (the format and the rules are plan-doc's `threads.rs`);
//! these commands read every set, work the threads out as the portal does,
//! and change only the caller's own set — a compare-and-set on its
//! revision, read again and retried when another tab or device of the same
//! link wrote meanwhile.

use api_types::reviews as wire;
use clap::Args;
use plan_doc::{Root, Thread, WriterSet, may_change_state, threads};
use serde::Serialize;
use serde_json::{Value, json};
use share_codec::{Annotation, AnnotationType, TupleLayout, to_shareable};

use super::{Checked, Linked, parse_comment_set, seal, unseal, warn};
use crate::env::Env;
use crate::error::CliError;
use crate::paste::ApiArgs;
use crate::terminal::{json_line, safe_text};

/// How often a change is tried again when the caller's own set changed
/// under it.
const ATTEMPTS: usize = 3;

/// Arguments of `review threads`.
#[derive(Args)]
pub struct ThreadsArgs {
    /// A link of the review (owner, reviewer or approver).
    link: String,
    /// Only the open threads.
    #[arg(long)]
    open: bool,
    /// Print `[{"id","quote","text","author","role","version","state",
    /// "addressed"?,"replies":[{"id","author","text"}]}]`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    api: ApiArgs,
}

/// Arguments of `review comment`.
#[derive(Args)]
pub struct CommentArgs {
    /// A link of the review.
    link: String,
    /// The comment.
    #[arg(long)]
    text: String,
    /// The plan text the comment is about (a general comment without).
    #[arg(long, value_name = "QUOTE")]
    on: Option<String>,
    /// The name to write under, for a link that has not written yet.
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    api: ApiArgs,
}

/// Arguments of `review reply`.
#[derive(Args)]
pub struct ReplyArgs {
    /// A link of the review.
    link: String,
    /// The thread's id (as `review threads` lists them).
    thread: String,
    /// The reply.
    #[arg(long)]
    text: String,
    /// Mark the thread addressed in the latest version (the owner only).
    #[arg(long)]
    addressed: bool,
    /// The name to write under, for a link that has not written yet.
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    api: ApiArgs,
}

/// Arguments of `review resolve` and `review reopen`.
#[derive(Args)]
pub struct StateArgs {
    /// A link of the review.
    link: String,
    /// The thread's id.
    thread: String,
    /// The name to write under, for a link that has not written yet.
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    api: ApiArgs,
}

/// A review's threads as the caller's link sees them, with what the
/// caller's own set holds now.
struct Read {
    view: wire::ReviewView,
    threads: Vec<Thread>,
    /// The caller's own set, decrypted (`None`: it has none).
    own: Option<Value>,
}

/// The writer sets of `view`, decrypted with the link's key (a set that
/// does not open is skipped with a warning), and the caller's own.
fn writer_sets(linked: &Linked, view: &wire::ReviewView) -> (Vec<WriterSet>, Option<Value>) {
    let mut sets = Vec::new();
    let mut own = None;
    for c in &view.comments {
        let opened = unseal(&linked.key, &c.data).and_then(|json| {
            let value: Value = serde_json::from_str(&json)
                .map_err(|e| CliError::ReviewService(format!("a comment set is not JSON: {e}")))?;
            let (annotations, _) = parse_comment_set(&json)?;
            Ok((value, annotations))
        });
        let (value, annotations) = match opened {
            Ok(opened) => opened,
            Err(error) => {
                warn(&format!(
                    "{}'s comments cannot be read ({error}); skipped",
                    safe_text(&c.name)
                ));
                continue;
            }
        };
        let roots = annotations
            .iter()
            .map(|a| Root {
                quote: a.original_text.clone(),
                text: a.text.clone().unwrap_or_default(),
            })
            .collect();
        sets.push(WriterSet::from_json(
            &c.writer, &c.role, &c.name, c.version, roots, &value,
        ));
        if c.writer == view.you.link {
            own = Some(value);
        }
    }
    (sets, own)
}

/// Reads the review and works its threads out.
async fn read(linked: &Linked) -> Result<Read, CliError> {
    let Checked { view, .. } = linked.check(false).await?;
    let (sets, own) = writer_sets(linked, &view);
    Ok(Read {
        threads: threads(&sets),
        view,
        own,
    })
}

/// The threads of `view` (for the export and `watch`).
pub(crate) fn of_view(linked: &Linked, view: &wire::ReviewView) -> Vec<Thread> {
    threads(&writer_sets(linked, view).0)
}

/// A thread as `review threads --json` prints it (and MCP's
/// `list_threads` answers it): one shape for scripts and agents.
#[derive(Serialize)]
pub(crate) struct ThreadOut<'a> {
    id: &'a str,
    quote: &'a str,
    text: &'a str,
    author: &'a str,
    role: &'a str,
    version: u64,
    state: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    addressed: Option<u64>,
    replies: Vec<ReplyOut<'a>>,
}

#[derive(Serialize)]
pub(crate) struct ReplyOut<'a> {
    id: &'a str,
    author: &'a str,
    text: &'a str,
}

/// `planshare review threads LINK [--open] [--json]`.
pub async fn list(args: ThreadsArgs, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    let read = read(&linked).await?;
    let shown: Vec<&Thread> = read
        .threads
        .iter()
        .filter(|t| !args.open || t.state == "open")
        .collect();
    if args.json {
        let out: Vec<ThreadOut<'_>> = shown.iter().map(|t| out(t)).collect();
        return json_line(&out);
    }
    if shown.is_empty() {
        warn(if args.open {
            "no open threads"
        } else {
            "no threads yet"
        });
        return Ok(String::new());
    }
    Ok(shown.iter().map(|t| render(t)).collect())
}

/// `thread` in the JSON shape of `review threads --json`.
pub(crate) fn out(thread: &Thread) -> ThreadOut<'_> {
    ThreadOut {
        id: &thread.id,
        quote: &thread.quote,
        text: &thread.text,
        author: &thread.author,
        role: &thread.role,
        version: thread.version,
        state: &thread.state,
        addressed: thread.addressed,
        replies: thread
            .replies
            .iter()
            .map(|r| ReplyOut {
                id: &r.id,
                author: &r.author,
                text: &r.text,
            })
            .collect(),
    }
}

/// A thread in a few lines of terminal text: its head, the comment and
/// its replies (all of it made safe for a terminal).
pub(crate) fn render(thread: &Thread) -> String {
    safe_text(&render_raw(thread)).into_owned()
}

/// [`render`] before it is made safe (for text that is made safe whole).
pub(crate) fn render_raw(thread: &Thread) -> String {
    let mut out = format!(
        "{}  {} · {} ({}) on v{}",
        thread.id, thread.state, thread.author, thread.role, thread.version
    );
    if let Some(n) = thread.addressed {
        out.push_str(&format!(" · addressed in v{n}"));
    }
    out.push('\n');
    if !thread.quote.is_empty() {
        out.push_str(&format!("  on \"{}\"\n", one_line(&thread.quote)));
    }
    for line in thread.text.lines() {
        out.push_str(&format!("  > {line}\n"));
    }
    for reply in &thread.replies {
        let mut head = format!("  - {}: ", reply.author);
        for (i, line) in reply.text.lines().enumerate() {
            if i > 0 {
                head.push_str("\n    ");
            }
            head.push_str(line);
        }
        if let Some(n) = reply.addressed {
            head.push_str(&format!(" (addressed in v{n})"));
        }
        out.push_str(&head);
        out.push('\n');
    }
    out.push('\n');
    out
}

/// `text` on one line, shortened to about 80 characters.
fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 80 {
        let mut cut: String = flat.chars().take(77).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

/// A fresh thread or reply id: 12 random base62 characters.
fn fresh_id() -> Result<String, CliError> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(12);
    while out.len() < 12 {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|_| CliError::Output("no random source".into()))?;
        // 248 = 4 × 62: no bias.
        out.extend(
            bytes
                .iter()
                .filter(|&&b| b < 248)
                .map(|&b| char::from(ALPHABET[usize::from(b % 62)])),
        );
    }
    out.truncate(12);
    Ok(out)
}

/// Unix milliseconds now.
fn now_ms() -> u64 {
    super::now_ms()
}

/// Changes the caller's own set with `change` (given the threads and the
/// set as they are now), seals it and stores it on the revision read; on a
/// concurrent write of the same link, reads again and repeats. Answers
/// what `change` answered.
async fn change_own<T>(
    linked: &Linked,
    name: Option<&str>,
    preview: Option<&str>,
    mut change: impl FnMut(&Read, &mut Value) -> Result<T, CliError>,
) -> Result<T, CliError> {
    let sealed = preview
        .map(|text| super::seal_preview(&linked.key, text))
        .transpose()?;
    for _ in 0..ATTEMPTS {
        let read = read(linked).await?;
        let bound = read.view.you.name.clone();
        let name = match (bound, name) {
            (Some(bound), _) => bound,
            (None, Some(name)) => name.to_owned(),
            (None, None) => {
                return Err(CliError::Usage(
                    "this link has not written yet: give the name to write under with --name"
                        .into(),
                ));
            }
        };
        let latest = read.view.latest;
        let mut set = read
            .own
            .clone()
            .unwrap_or_else(|| json!({ "v": latest, "a": [] }));
        let answer = change(&read, &mut set)?;
        set["v"] = json!(latest);
        let base = read
            .view
            .comments
            .iter()
            .find(|c| c.writer == read.view.you.link)
            .map_or(0, |c| c.seq);
        let request = wire::PutCommentsRequest {
            name,
            version: latest,
            data: seal(&linked.key, &set.to_string())?,
            base: Some(base),
            sealed: sealed.clone(),
        };
        if linked
            .api
            .put_comments(&linked.id, &linked.token, &request)
            .await?
            .is_some()
        {
            return Ok(answer);
        }
    }
    Err(CliError::Rejected(
        "this link's comments kept changing while this command wrote them (another tab or device of the same link); try again".into(),
    ))
}

/// Appends `value` to the array `key` of `set` (made when missing or not
/// an array).
fn push_to(set: &mut Value, key: &str, value: Value) {
    match set.get_mut(key).and_then(Value::as_array_mut) {
        Some(list) => list.push(value),
        None => set[key] = json!([value]),
    }
}

/// The thread `id` of `read`, or a usage error naming how to find ids.
fn find<'a>(read: &'a Read, id: &str) -> Result<&'a Thread, CliError> {
    read.threads.iter().find(|t| t.id == id).ok_or_else(|| {
        CliError::Usage(format!(
            "this review has no thread {}: `planshare review threads LINK` lists them",
            safe_text(id)
        ))
    })
}

/// `planshare review comment LINK --text T [--on QUOTE]`: a new thread;
/// prints its id.
pub async fn comment(args: CommentArgs, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    let text = args.text.trim().to_owned();
    if text.is_empty() {
        return Err(CliError::Usage("--text is empty".into()));
    }
    let text_for_preview = text.clone();
    let annotation = Annotation {
        kind: Some(match args.on {
            Some(_) => AnnotationType::Comment,
            None => AnnotationType::GlobalComment,
        }),
        original_text: args.on.clone().unwrap_or_default(),
        text: Some(text),
        ..Annotation::default()
    };
    let tuple: Value = serde_json::from_str(
        &to_shareable(std::slice::from_ref(&annotation), TupleLayout::Current).stringify(),
    )
    .map_err(|e| CliError::Output(format!("cannot encode the comment: {e}")))?;
    let id = fresh_id()?;
    change_own(
        &linked,
        args.name.as_deref(),
        Some(&text_for_preview),
        |_, set| {
            let roots = set.get("a").and_then(Value::as_array).map_or(0, Vec::len);
            // Roots written before threads (no id) keep theirs: `null`.
            let mut ids: Vec<Value> = set
                .get("ids")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            ids.resize(roots, Value::Null);
            ids.push(json!(id));
            set["ids"] = Value::Array(ids);
            for t in tuple.as_array().into_iter().flatten() {
                push_to(set, "a", t.clone());
            }
            Ok(())
        },
    )
    .await?;
    Ok(format!("{id}\n"))
}

/// `planshare review reply LINK THREAD --text T [--addressed]`.
pub async fn reply(args: ReplyArgs, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    reply_in(
        &linked,
        args.name.as_deref(),
        &args.thread,
        &args.text,
        args.addressed,
    )
    .await?;
    Ok(format!("replied to {}\n", safe_text(&args.thread)))
}

/// Replies `text` in `thread` with `linked`'s set (written under `name`
/// when the link has none bound); `addressed`: the latest version
/// addresses the thread (the owner's).
pub(crate) async fn reply_in(
    linked: &Linked,
    name: Option<&str>,
    thread: &str,
    text: &str,
    addressed: bool,
) -> Result<(), CliError> {
    let text = text.trim().to_owned();
    if text.is_empty() {
        return Err(CliError::Usage("the reply's text is empty".into()));
    }
    let id = fresh_id()?;
    change_own(linked, name, Some(&text), |read, set| {
        find(read, thread)?;
        let mut reply = json!({ "id": id, "to": thread, "text": text, "at": now_ms() });
        if addressed {
            if read.view.you.role != "owner" {
                return Err(CliError::Usage(
                    "--addressed is the owner's: it says the latest version addresses the thread"
                        .into(),
                ));
            }
            reply["addressed"] = json!(read.view.latest);
        }
        push_to(set, "replies", reply);
        Ok(())
    })
    .await
}

/// The threads of `linked`'s review as they are now.
pub(crate) async fn current(linked: &Linked) -> Result<Vec<Thread>, CliError> {
    Ok(read(linked).await?.threads)
}

/// `planshare review resolve|reopen LINK THREAD`: refused (exit 12) where
/// the rules would ignore it.
pub async fn set_state(args: StateArgs, state: &str, env: &Env) -> Result<String, CliError> {
    let linked = Linked::from_link(&args.link, &args.api, env)?;
    change_state(&linked, args.name.as_deref(), &args.thread, state).await?;
    Ok(format!(
        "{} {}\n",
        if state == "resolved" {
            "resolved"
        } else {
            "reopened"
        },
        safe_text(&args.thread)
    ))
}

/// Sets `thread`'s state (`resolved` or `open`) with `linked`'s set;
/// refused (exit 12) where the rules would ignore it.
pub(crate) async fn change_state(
    linked: &Linked,
    name: Option<&str>,
    thread: &str,
    state: &str,
) -> Result<(), CliError> {
    change_own(linked, name, None, |read, set| {
        let found = find(read, thread)?;
        let you = &read.view.you;
        if !may_change_state(found, &you.link, &you.role) {
            return Err(CliError::Unauthorized(format!(
                "only the thread's author ({}), the owner or an approver can {} it",
                safe_text(&found.author),
                if state == "resolved" {
                    "resolve"
                } else {
                    "reopen"
                }
            )));
        }
        push_to(
            set,
            "states",
            json!({ "to": thread, "state": state, "at": now_ms() }),
        );
        Ok(())
    })
    .await
}

//! The keyring: the reviews this user made, kept so that later commands
//! (and agents: the Claude Code hook, MCP) can name a review by its id
//! instead of carrying its owner link on a command line, where `ps` shows
//! it.
//!
//! One file per review, `<id>.json`, in `$XDG_DATA_HOME/planshare/reviews/`
//! (else `~/.local/share/planshare/reviews/`): the directory is made 0700
//! and kept so (a looser one is tightened), each file is written 0600 to a
//! temporary name and renamed over the old one, so a reader never sees half
//! a file. A file holds the owner link — the review's key and owner token —
//! and every link minted for people, with its role.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::error::CliError;

/// One review of the keyring.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The review id.
    pub id: String,
    /// The owner link (key and owner token in its fragment).
    pub owner: String,
    /// The links minted for people.
    #[serde(default)]
    pub links: Vec<KeptLink>,
    /// When the review expires (Unix ms).
    pub expires_at: u64,
    /// The Claude Code session whose plans it reviews (the hook's reviews).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// A link minted for a person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptLink {
    /// The link id.
    pub id: String,
    /// `reviewer` or `approver`.
    pub role: String,
    /// The link.
    pub url: String,
}

/// Where the keyring is.
pub fn dir(env: &Env) -> Result<PathBuf, CliError> {
    let base = match env.data_home() {
        Some(base) => base,
        None => env
            .home()
            .ok_or_else(|| {
                CliError::Output(
                    "no home directory and no XDG_DATA_HOME: nowhere to keep the review's links"
                        .into(),
                )
            })?
            .join(".local/share"),
    };
    Ok(base.join("planshare").join("reviews"))
}

/// Makes the keyring's directory, 0700 (tightening one that exists).
fn ready(dir: &Path) -> Result<(), CliError> {
    let failed = |e: std::io::Error| {
        CliError::Output(format!("cannot make the keyring {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(failed)?;
    }
    Ok(())
}

/// Whether `id` can name a keyring file (a review id: 6–16 letters and
/// digits).
fn is_id(id: &str) -> bool {
    (6..=16).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Keeps `entry` (replacing what was kept for its review).
pub fn save(env: &Env, entry: &Entry) -> Result<PathBuf, CliError> {
    if !is_id(&entry.id) {
        return Err(CliError::Output(
            "a review id that cannot name a file".into(),
        ));
    }
    let dir = dir(env)?;
    ready(&dir)?;
    let path = dir.join(format!("{}.json", entry.id));
    let failed =
        |e: std::io::Error| CliError::Output(format!("cannot write {}: {e}", path.display()));
    let json = serde_json::to_vec_pretty(entry).map_err(|e| CliError::Output(e.to_string()))?;
    let temp = dir.join(format!(".{}.json.tmp", entry.id));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(&temp).map_err(failed)?;
    file.write_all(&json)
        .and_then(|()| file.sync_all())
        .map_err(failed)?;
    std::fs::rename(&temp, &path).map_err(failed)?;
    Ok(path)
}

/// Changes the kept entry of review `id` with `change` (nothing when the
/// keyring has none), holding the keyring's lock from the read to the
/// write, so two commands changing the same review (an MCP server and a
/// `review links --add`) do not lose each other's change.
pub fn update(env: &Env, id: &str, change: impl FnOnce(&mut Entry)) -> Result<(), CliError> {
    let dir = dir(env)?;
    ready(&dir)?;
    let path = dir.join(".lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| CliError::Output(format!("cannot open {}: {e}", path.display())))?;
    // Released when `lock` is dropped (closed), also by a killed process.
    lock.lock()
        .map_err(|e| CliError::Output(format!("cannot lock {}: {e}", path.display())))?;
    if let Some(mut entry) = load(env, id)? {
        change(&mut entry);
        save(env, &entry)?;
    }
    Ok(())
}

/// The kept entry of review `id`, if any.
pub fn load(env: &Env, id: &str) -> Result<Option<Entry>, CliError> {
    if !is_id(id) {
        return Ok(None);
    }
    let path = dir(env)?.join(format!("{id}.json"));
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            CliError::Input(format!(
                "the keyring's {} does not read: {e}",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::Input(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// Every kept entry, by id; files that do not read are skipped with a
/// warning.
pub fn all(env: &Env) -> Result<Vec<Entry>, CliError> {
    let dir = dir(env)?;
    let listing = match std::fs::read_dir(&dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(CliError::Input(format!(
                "cannot read {}: {e}",
                dir.display()
            )));
        }
    };
    let mut entries = Vec::new();
    for item in listing.flatten() {
        let name = item.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        match load(env, id) {
            Ok(Some(entry)) => entries.push(entry),
            Ok(None) => {}
            Err(error) => super::warn(&format!("{error}; skipped")),
        }
    }
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(entries)
}

/// What a review command's link argument stands for: `-` is a link read
/// from standard input (its first line), an id the keyring holds is that
/// review's owner link, anything else is a link as given.
pub fn resolve(arg: &str, env: &Env) -> Result<String, CliError> {
    if arg == "-" {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| CliError::Input(format!("cannot read a link from standard input: {e}")))?;
        let link = line.trim();
        if link.is_empty() {
            return Err(CliError::Usage(
                "`-` reads a review link from standard input, and it was empty".into(),
            ));
        }
        return Ok(link.to_owned());
    }
    if is_id(arg) {
        return match load(env, arg)? {
            Some(entry) => Ok(entry.owner),
            None => Err(CliError::Usage(format!(
                "no review {arg} in the keyring ({}): give its link, or `-` to read the link from standard input",
                dir(env)
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            ))),
        };
    }
    Ok(arg.to_owned())
}

/// Arguments of `review list`.
#[derive(clap::Args)]
pub struct ListArgs {
    /// Print `[{"id","title","state","round","openThreads","expiresAt",
    /// "links":[{"id","role","name","url"}]}]` (the links for people;
    /// never the owner link).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    api: crate::paste::ApiArgs,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    id: String,
    title: Option<String>,
    /// `open`, `approved`, `changes_requested`, or `gone` (deleted or
    /// expired).
    state: String,
    round: Option<u64>,
    open_threads: Option<usize>,
    expires_at: u64,
    /// When a decision is due (Unix ms), if the owner set a deadline.
    #[serde(rename = "deadline", skip_serializing_if = "Option::is_none")]
    deadline: Option<u64>,
    links: Vec<ListedLink>,
}

#[derive(Serialize)]
struct ListedLink {
    id: String,
    role: String,
    name: Option<String>,
    url: String,
}

/// `planshare review list [--json]`: the keyring, each review read now.
pub async fn list(args: ListArgs, env: &Env) -> Result<String, CliError> {
    let mut listed = Vec::new();
    for entry in all(env)? {
        let linked = super::Linked::from_link(&entry.owner, &args.api, env)?;
        let (title, state, round, open, names, deadline) = match linked.check(true).await {
            Ok(super::Checked { view, latest }) => {
                let open = super::threads::of_view(&linked, &view)
                    .iter()
                    .filter(|t| t.state == "open")
                    .count();
                let names: Vec<(String, Option<String>)> = view
                    .links
                    .iter()
                    .flatten()
                    .map(|l| (l.id.clone(), l.name.clone()))
                    .collect();
                (
                    latest.map(|p| p.title()),
                    view.state,
                    Some(view.round),
                    Some(open),
                    names,
                    view.deadline,
                )
            }
            Err(CliError::ReviewNotFound | CliError::ReviewLinkRefused(_)) => {
                (None, "gone".to_owned(), None, None, Vec::new(), None)
            }
            Err(other) => return Err(other),
        };
        let links = entry
            .links
            .into_iter()
            .filter(|l| state == "gone" || names.iter().any(|(id, _)| *id == l.id))
            .map(|l| ListedLink {
                name: names
                    .iter()
                    .find(|(id, _)| *id == l.id)
                    .and_then(|(_, n)| n.clone()),
                id: l.id,
                role: l.role,
                url: l.url,
            })
            .collect();
        listed.push(Listed {
            id: entry.id,
            title,
            state,
            round,
            open_threads: open,
            expires_at: entry.expires_at,
            deadline,
            links,
        });
    }
    if args.json {
        return crate::terminal::json_line(&listed);
    }
    if listed.is_empty() {
        super::warn("no reviews in the keyring yet: `planshare review start` adds one");
        return Ok(String::new());
    }
    let mut out = String::new();
    for review in &listed {
        let mut line = format!("{}  {}", review.id, review.state.replace('_', " "));
        if let Some(round) = review.round {
            line.push_str(&format!(" · round {round}"));
        }
        if let Some(open) = review.open_threads {
            line.push_str(&format!(
                " · {open} open thread{}",
                if open == 1 { "" } else { "s" }
            ));
        }
        if let Some(at) = review.deadline {
            let now = super::now_ms();
            if at > now {
                line.push_str(&format!(" · due {}", super::expiry_text(at, now)));
            } else {
                line.push_str(" · deadline passed");
            }
        }
        if let Some(title) = &review.title {
            line.push_str(&format!(" · {title}"));
        }
        out.push_str(&line);
        out.push('\n');
        for link in &review.links {
            out.push_str(&format!(
                "  {}  {:<8}  {}  {}\n",
                link.id,
                link.role,
                link.name.as_deref().unwrap_or("(no name yet)"),
                link.url
            ));
        }
    }
    Ok(crate::terminal::safe_text(&out).into_owned())
}

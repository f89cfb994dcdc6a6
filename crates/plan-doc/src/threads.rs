//! Threads of a review: who answered which comment, and whether it is
//! resolved — worked out from every writer's comment set by one set of
//! rules, which every client applies the same way (the portal's port is
//! `crates/portal/web/plandoc-threads.js`, held to this module by the
//! differential test in `tests/js_ports.rs`).
//!
//! A review's server stores one encrypted comment set per writer and never
//! reads it; the threads live inside the sets' plaintext, in fields that
//! older clients ignore:
//!
//! ```json
//! {"v": 2, "a": [annotation tuples], "ids": ["k3J9x0Qa", …],
//!  "replies": [{"id": "r1…", "to": "k3J9x0Qa", "text": "…", "at": 1733…,
//!               "addressed": 4}],
//!  "states": [{"to": "k3J9x0Qa", "state": "resolved", "at": 1733…}]}
//! ```
//!
//! - `ids[i]` is the thread id of annotation `a[i]` (random, made by the
//!   client, at least 8 characters): every annotation is the root of a
//!   thread. A root without an id (a set an older client wrote) gets
//!   `<writer>.<index>`, which no client makes.
//! - A reply answers the thread `to`; `addressed` (a version number) is
//!   "addressed in v4", and counts only on the owner's replies.
//! - A state change resolves or reopens the thread `to`. It counts when its
//!   writer wrote the root, or is the owner, or an approver: anyone else's
//!   is ignored. A thread's state is its newest counted change (by `at`,
//!   then by writer id, then the later in its set); `open` without any.
//! - Roles are the server's (`GET /reviews/{id}` gives each set's writer's
//!   role), so a writer cannot claim one in its own set.
//! - A root id that two roots carry belongs to one of them: the owner's,
//!   else the one whose writer id sorts first (then the first in its set);
//!   the others are shown as threads of their own under `<writer>.<index>`.
//! - Replies and changes that name no thread, have no text, or carry
//!   values of the wrong type are ignored, never an error.
//!
//! Threads come in a fixed order: by the root writer's id (the owner,
//! `owner`, sorts among them as its id does), then as the set lists them;
//! replies by `at`, then writer id, then id.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// One writer's comment set as the thread rules read it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterSet {
    /// `owner` or the link id.
    pub writer: String,
    /// `owner`, `reviewer` or `approver` (the server's word).
    pub role: String,
    /// The writer's name.
    pub name: String,
    /// The version the set was made on.
    pub version: u64,
    /// The annotations (thread roots), in the set's order.
    pub roots: Vec<Root>,
    /// `ids` of the set (shorter than `roots`, or a value that is not a
    /// string: `None`).
    #[serde(default)]
    pub ids: Vec<Option<String>>,
    /// `replies` of the set.
    #[serde(default)]
    pub replies: Vec<Entry>,
    /// `states` of the set.
    #[serde(default)]
    pub states: Vec<Entry>,
}

impl WriterSet {
    /// A writer's set from its decrypted JSON (`set`: the object with
    /// `ids`, `replies` and `states`; anything else in it is not read) and
    /// its annotations, decoded by the caller. Values of the wrong type
    /// are read as absent, as the portal reads them.
    pub fn from_json(
        writer: &str,
        role: &str,
        name: &str,
        version: u64,
        roots: Vec<Root>,
        set: &serde_json::Value,
    ) -> Self {
        let list = |key: &str| {
            set.get(key)
                .and_then(serde_json::Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
        };
        WriterSet {
            writer: writer.to_owned(),
            role: role.to_owned(),
            name: name.to_owned(),
            version,
            roots,
            ids: list("ids")
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect(),
            replies: list("replies").iter().map(Entry::from_json).collect(),
            states: list("states").iter().map(Entry::from_json).collect(),
        }
    }
}

impl Entry {
    /// An entry from its JSON, each field kept when it has its type (`at`
    /// and `addressed`: whole numbers from 0 to 2^53, as JavaScript reads
    /// them).
    pub fn from_json(value: &serde_json::Value) -> Self {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let whole = |key: &str| value.get(key).and_then(whole_number);
        Entry {
            id: text("id"),
            to: text("to"),
            text: text("text"),
            state: text("state"),
            at: whole("at"),
            addressed: whole("addressed"),
        }
    }
}

/// A JSON number that is a whole number from 0 to 2^53 − 1 (JavaScript's
/// safe integers), however it is written (`5`, `5.0`).
fn whole_number(value: &serde_json::Value) -> Option<u64> {
    const MAX_SAFE: u64 = (1 << 53) - 1;
    let n = value.as_number()?;
    if let Some(n) = n.as_u64() {
        return (n <= MAX_SAFE).then_some(n);
    }
    let f = n.as_f64()?;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    (f.fract() == 0.0 && (0.0..=MAX_SAFE as f64).contains(&f)).then_some(f as u64)
}

/// What a thread's root shows: the quoted plan text and the comment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// The plan text the comment is about (empty for a general comment).
    pub quote: String,
    /// The comment.
    pub text: String,
}

/// A reply or a state change as stored: each field kept only when it
/// has the type the rules expect.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// A reply's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The thread it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// A reply's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A state change's state (`resolved` or `open`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// When, Unix ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
    /// "Addressed in version n" (the owner's replies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addressed: Option<u64>,
}

/// A thread as every client shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// The thread id (its root's).
    pub id: String,
    /// The root's writer id.
    pub writer: String,
    /// The root's writer's name.
    pub author: String,
    /// The root's writer's role.
    pub role: String,
    /// The version the root was written on.
    pub version: u64,
    /// The quoted plan text.
    pub quote: String,
    /// The root comment.
    pub text: String,
    /// `open` or `resolved`.
    pub state: String,
    /// Who set the state last (a name), when a change counted.
    #[serde(rename = "stateBy", skip_serializing_if = "Option::is_none")]
    pub state_by: Option<String>,
    /// The version the owner's newest reply marked it addressed in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addressed: Option<u64>,
    /// The replies, oldest first.
    pub replies: Vec<Reply>,
}

/// A reply in a thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// The reply's id.
    pub id: String,
    /// Its writer id.
    pub writer: String,
    /// Its writer's name.
    pub author: String,
    /// Its writer's role.
    pub role: String,
    /// The reply.
    pub text: String,
    /// When, Unix ms.
    pub at: u64,
    /// "Addressed in version n", on the owner's replies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addressed: Option<u64>,
}

/// The id a root without a usable one gets: `<writer>.<index>`.
fn fallback_id(writer: &str, index: usize) -> String {
    format!("{writer}.{index}")
}

/// Whether `id` is one a client may make: 8–64 characters, none of them
/// a dot (kept for [`fallback_id`]) or a control character.
pub fn is_thread_id(id: &str) -> bool {
    (8..=64).contains(&id.chars().count()) && !id.chars().any(|c| c == '.' || c.is_control())
}

/// The threads of a review's comment sets (see the module's rules).
pub fn threads(sets: &[WriterSet]) -> Vec<Thread> {
    let mut order: Vec<&WriterSet> = sets.iter().collect();
    order.sort_by(|a, b| a.writer.cmp(&b.writer));
    // Which root holds each claimed id: the owner's, else by writer order.
    let mut holder: HashMap<&str, (bool, usize, usize)> = HashMap::new();
    for (w, set) in order.iter().enumerate() {
        for i in 0..set.roots.len() {
            let Some(Some(id)) = set.ids.get(i) else {
                continue;
            };
            if !is_thread_id(id) {
                continue;
            }
            let rank = (set.role != "owner", w, i);
            holder
                .entry(id.as_str())
                .and_modify(|held| {
                    if rank < *held {
                        *held = rank;
                    }
                })
                .or_insert(rank);
        }
    }
    let mut threads = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for (w, set) in order.iter().enumerate() {
        for (i, root) in set.roots.iter().enumerate() {
            let claimed = match set.ids.get(i) {
                Some(Some(id)) if is_thread_id(id) => Some(id.as_str()),
                _ => None,
            };
            let id = match claimed {
                Some(id)
                    if holder
                        .get(id)
                        .is_some_and(|&(_, hw, hi)| (hw, hi) == (w, i)) =>
                {
                    id.to_owned()
                }
                _ => fallback_id(&set.writer, i),
            };
            by_id.insert(id.clone(), threads.len());
            threads.push(Thread {
                id,
                writer: set.writer.clone(),
                author: set.name.clone(),
                role: set.role.clone(),
                version: set.version,
                quote: root.quote.clone(),
                text: root.text.clone(),
                state: "open".to_owned(),
                state_by: None,
                addressed: None,
                replies: Vec::new(),
            });
        }
    }
    // The newest counted change per thread, by (at, writer, position):
    // its key, its state and its writer's name.
    type Newest<'a> = ((u64, &'a str, usize), &'a str, &'a str);
    let mut newest: HashMap<usize, Newest<'_>> = HashMap::new();
    for set in &order {
        for (p, change) in set.states.iter().enumerate() {
            let (Some(to), Some(state), Some(at)) = (&change.to, &change.state, change.at) else {
                continue;
            };
            if state != "resolved" && state != "open" {
                continue;
            }
            let Some(&t) = by_id.get(to.as_str()) else {
                continue;
            };
            let allowed =
                threads[t].writer == set.writer || set.role == "owner" || set.role == "approver";
            if !allowed {
                continue;
            }
            let key = (at, set.writer.as_str(), p);
            if newest.get(&t).is_none_or(|(held, _, _)| key > *held) {
                newest.insert(t, (key, state.as_str(), set.name.as_str()));
            }
        }
        for reply in &set.replies {
            let (Some(id), Some(to), Some(text), Some(at)) =
                (&reply.id, &reply.to, &reply.text, reply.at)
            else {
                continue;
            };
            if text.is_empty() {
                continue;
            }
            let Some(&t) = by_id.get(to.as_str()) else {
                continue;
            };
            threads[t].replies.push(Reply {
                id: id.clone(),
                writer: set.writer.clone(),
                author: set.name.clone(),
                role: set.role.clone(),
                text: text.clone(),
                at,
                addressed: reply.addressed.filter(|_| set.role == "owner"),
            });
        }
    }
    for (t, (_, state, by)) in newest {
        threads[t].state = state.to_owned();
        threads[t].state_by = Some(by.to_owned());
    }
    for thread in &mut threads {
        thread
            .replies
            .sort_by(|a, b| (a.at, &a.writer, &a.id).cmp(&(b.at, &b.writer, &b.id)));
        thread.addressed = thread
            .replies
            .iter()
            .rev()
            .find_map(|reply| reply.addressed);
    }
    threads
}

/// Whether `writer` with `role` may resolve or reopen `thread`: it wrote
/// the root, or it is the owner or an approver.
pub fn may_change_state(thread: &Thread, writer: &str, role: &str) -> bool {
    thread.writer == writer || role == "owner" || role == "approver"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(writer: &str, role: &str, roots: &[(&str, &str)]) -> WriterSet {
        WriterSet {
            writer: writer.into(),
            role: role.into(),
            name: format!("{writer}-name"),
            version: 1,
            roots: roots
                .iter()
                .map(|(_, text)| Root {
                    quote: String::new(),
                    text: (*text).into(),
                })
                .collect(),
            ids: roots.iter().map(|(id, _)| Some((*id).into())).collect(),
            ..WriterSet::default()
        }
    }

    fn change(to: &str, state: &str, at: u64) -> Entry {
        Entry {
            to: Some(to.into()),
            state: Some(state.into()),
            at: Some(at),
            ..Entry::default()
        }
    }

    fn reply(id: &str, to: &str, at: u64, addressed: Option<u64>) -> Entry {
        Entry {
            id: Some(id.into()),
            to: Some(to.into()),
            text: Some(format!("reply {id}")),
            at: Some(at),
            addressed,
            ..Entry::default()
        }
    }

    #[test]
    fn replies_and_states_follow_the_rules() {
        let mut alice = set("AliceLink01", "reviewer", &[("thread-a1", "why?")]);
        let mut bob = set("BobLink0001", "reviewer", &[("thread-b1", "and this?")]);
        let mut owner = set("owner", "owner", &[]);
        let mut ann = set("AnnLink0001", "approver", &[]);
        // Bob forges a resolve of Alice's thread: ignored.
        bob.states.push(change("thread-a1", "resolved", 50));
        bob.replies
            .push(reply("reply-b1", "thread-a1", 20, Some(3)));
        owner
            .replies
            .push(reply("reply-o1", "thread-a1", 10, Some(2)));
        owner.replies.push(reply("reply-o2", "thread-a1", 30, None));
        owner.states.push(change("thread-b1", "resolved", 40));
        // An approver reopens what the owner resolved, later.
        ann.states.push(change("thread-b1", "open", 45));
        // Alice resolves her own thread.
        alice.states.push(change("thread-a1", "resolved", 60));
        alice.states.push(change("nowhere-000", "resolved", 70));
        let threads = threads(&[owner, alice, bob, ann]);
        type Summary<'a> = (&'a str, &'a str, Option<&'a str>, Option<u64>, usize);
        let summary: Vec<Summary<'_>> = threads
            .iter()
            .map(|t| {
                (
                    t.id.as_str(),
                    t.state.as_str(),
                    t.state_by.as_deref(),
                    t.addressed,
                    t.replies.len(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "thread-a1",
                    "resolved",
                    Some("AliceLink01-name"),
                    Some(2),
                    3
                ),
                ("thread-b1", "open", Some("AnnLink0001-name"), None, 0),
            ]
        );
        let order: Vec<&str> = threads[0].replies.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(order, ["reply-o1", "reply-b1", "reply-o2"]);
        assert_eq!(
            threads[0].replies[1].addressed, None,
            "only the owner's count"
        );
    }

    #[test]
    fn roots_without_ids_and_claimed_ids_get_their_own_threads() {
        let mut old = set("OldLink0001", "reviewer", &[("x", "one"), ("x", "two")]);
        old.ids.clear();
        let copy = set("AaaLink0001", "reviewer", &[("thread-o1", "copied")]);
        let owner = set("owner", "owner", &[("thread-o1", "mine")]);
        let ids: Vec<String> = threads(&[old, copy, owner])
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(
            ids,
            [
                "AaaLink0001.0",
                "OldLink0001.0",
                "OldLink0001.1",
                "thread-o1"
            ]
        );
        assert!(!is_thread_id("short"));
        assert!(!is_thread_id("has.dot.in"));
        assert!(is_thread_id("k3J9x0Qa"));
    }

    #[test]
    fn a_tie_in_time_goes_to_the_greater_writer_id_then_the_later_change() {
        let owner = {
            let mut s = set("owner", "owner", &[("thread-t1", "t")]);
            s.states.push(change("thread-t1", "resolved", 5));
            s.states.push(change("thread-t1", "open", 5));
            s
        };
        let ann = {
            let mut s = set("AnnLink0001", "approver", &[]);
            s.states.push(change("thread-t1", "resolved", 5));
            s
        };
        let got = threads(&[owner.clone(), ann.clone()]);
        // "owner" > "AnnLink0001": the owner's later change wins.
        assert_eq!(got[0].state, "open");
        let mut later = ann;
        later.states[0].at = Some(6);
        assert_eq!(threads(&[owner, later])[0].state, "resolved");
    }
}

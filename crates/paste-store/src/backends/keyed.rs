//! What the Redis and S3 stores share in their listings: both name an
//! entry by a flat key (`<prefix><namespace><sep><id>` for a paste,
//! `<prefix><namespace><sep>r<sep><id>` for a review blob) and keep what
//! the doctor moves aside under `<prefix>.quarantine<sep>`, where no
//! namespace can be (a namespace cannot start with a dot).

use crate::inventory::{EntryKind, InventoryEntry, head_of};
use crate::{Namespace, PasteId, PasteKey};

/// What a key under a store's prefix is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StoredKeyKind {
    /// A paste.
    Paste(PasteKey),
    /// A review blob.
    ReviewBlob(PasteKey),
    /// A value the doctor moved aside.
    Quarantined,
    /// A key the store never writes.
    Unknown,
}

/// The first bytes of a value (up to a record header), its length, and
/// the store's tag of that exact value when it has one (an S3 ETag), so a
/// repair touches the value that was checked and not a newer one.
#[derive(Clone, Debug)]
pub(crate) struct ValueHead {
    /// Up to [`RECORD_HEADER_LEN`](crate::RECORD_HEADER_LEN) bytes.
    pub(crate) head: Vec<u8>,
    /// The value's length.
    pub(crate) len: u64,
    /// The store's tag of the value (an ETag), if it has one.
    pub(crate) tag: Option<String>,
}

/// The names of one page of a listing, classified by `classify`, with the
/// quarantine left out; and the names among them that are records, whose
/// heads [`with_heads`] wants, in that order.
pub(crate) fn classified(
    names: Vec<String>,
    classify: impl Fn(&str) -> StoredKeyKind,
) -> (Vec<(String, EntryKind)>, Vec<String>) {
    let mut listed = Vec::with_capacity(names.len());
    let mut records = Vec::new();
    for name in names {
        let kind = match classify(&name) {
            StoredKeyKind::Quarantined => continue,
            StoredKeyKind::Paste(key) => EntryKind::Paste(key),
            StoredKeyKind::ReviewBlob(key) => EntryKind::ReviewBlob(key),
            StoredKeyKind::Unknown => EntryKind::Unknown,
        };
        if kind != EntryKind::Unknown {
            records.push(name.clone());
        }
        listed.push((name, kind));
    }
    (listed, records)
}

/// The entries of a page: an unknown name as it is, a record with its
/// head (`heads`, one per record of [`classified`], in order). A record
/// whose head is `None` was deleted since it was listed and is left out.
pub(crate) fn with_heads(
    listed: Vec<(String, EntryKind)>,
    heads: Vec<Option<ValueHead>>,
) -> Vec<InventoryEntry> {
    let mut heads = heads.into_iter();
    let mut items = Vec::with_capacity(listed.len());
    for (name, kind) in listed {
        if kind == EntryKind::Unknown {
            items.push(InventoryEntry {
                name,
                kind,
                record: None,
            });
        } else if let Some(head) = heads.next().flatten() {
            items.push(InventoryEntry {
                name,
                kind,
                record: Some(head_of(&head.head, head.len, head.tag)),
            });
        }
    }
    items
}

/// The name of the quarantine, after the prefix and before the separator.
pub(crate) const QUARANTINE: &str = ".quarantine";

/// Classifies `name` under `prefix`, its parts separated by `sep`.
pub(crate) fn classify(prefix: &str, sep: char, name: &str) -> StoredKeyKind {
    let Some(rest) = name.strip_prefix(prefix) else {
        return StoredKeyKind::Unknown;
    };
    if rest
        .strip_prefix(QUARANTINE)
        .is_some_and(|r| r.starts_with(sep))
    {
        return StoredKeyKind::Quarantined;
    }
    let mut parts = rest.split(sep);
    let (Some(ns), Some(second)) = (parts.next(), parts.next()) else {
        return StoredKeyKind::Unknown;
    };
    let Ok(namespace) = Namespace::parse(ns) else {
        return StoredKeyKind::Unknown;
    };
    match (second, parts.next(), parts.next()) {
        (id, None, None) => PasteId::parse(id).map_or(StoredKeyKind::Unknown, |id| {
            StoredKeyKind::Paste(PasteKey::new(namespace, id))
        }),
        ("r", Some(id), None) => PasteId::parse(id).map_or(StoredKeyKind::Unknown, |id| {
            StoredKeyKind::ReviewBlob(PasteKey::review_blob(namespace, id))
        }),
        _ => StoredKeyKind::Unknown,
    }
}

/// Where `name` (under `prefix`) goes when it is moved aside; `None` for a
/// name outside the prefix.
pub(crate) fn quarantine_name(prefix: &str, sep: char, name: &str) -> Option<String> {
    let rest = name.strip_prefix(prefix)?;
    Some(format!("{prefix}{QUARANTINE}{sep}{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_told_apart_by_their_names() {
        let ns = Namespace::parse("team-a").unwrap_or_else(|e| panic!("{e}"));
        let id = PasteId::parse("AbCd1234").unwrap_or_else(|e| panic!("{e}"));
        for (prefix, sep) in [("planshare:paste:", ':'), ("pastes/", '/'), ("", '/')] {
            let paste = format!("{prefix}team-a{sep}AbCd1234");
            let blob = format!("{prefix}team-a{sep}r{sep}AbCd1234");
            assert_eq!(
                classify(prefix, sep, &paste),
                StoredKeyKind::Paste(PasteKey::new(ns.clone(), id.clone()))
            );
            assert_eq!(
                classify(prefix, sep, &blob),
                StoredKeyKind::ReviewBlob(PasteKey::review_blob(ns.clone(), id.clone()))
            );
            let aside = quarantine_name(prefix, sep, &paste).unwrap_or_default();
            assert_eq!(
                aside,
                format!("{prefix}.quarantine{sep}team-a{sep}AbCd1234")
            );
            assert_eq!(classify(prefix, sep, &aside), StoredKeyKind::Quarantined);
            for odd in [
                format!("{prefix}team-a"),
                format!("{prefix}Team{sep}AbCd1234"),
                format!("{prefix}team-a{sep}abc"),
                format!("{prefix}team-a{sep}x{sep}AbCd1234"),
                format!("{prefix}team-a{sep}r{sep}AbCd1234{sep}extra"),
                format!("{prefix}.quarantined{sep}team-a{sep}AbCd1234"),
            ] {
                assert_eq!(classify(prefix, sep, &odd), StoredKeyKind::Unknown, "{odd}");
            }
        }
        assert_eq!(
            classify("planshare:paste:", ':', "other:team-a:AbCd1234"),
            StoredKeyKind::Unknown
        );
        assert_eq!(quarantine_name("p/", '/', "q/team-a/AbCd1234"), None);
    }
}

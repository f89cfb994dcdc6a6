//! What a store holds, listed a page at a time: [`StoreInventory`], the
//! view that `planshare-server doctor` (and anything else that must look at
//! every stored value without holding them all) walks, on every backend.
//!
//! A listing names each value by the backend's own name for it (a file's
//! path, a Redis key, an S3 object key), says what that name is (a paste, a
//! review blob, or something the store never writes) and gives the
//! record's head, checked as a read would check it — but without its
//! payload: a record whose header is of an unknown format, or damaged, is
//! an entry like any other, never an error of the listing.
//!
//! Paging: each call takes the cursor the previous page returned (`None`
//! for the first page) and a page size, which is a hint: a page may hold
//! fewer entries than asked, even none, before the end (Redis `SCAN`), or a
//! few more (one `SCAN` step); only a page whose `next` is `None` ends the
//! listing. A value stored or removed while a listing runs may or may not
//! be listed; one that is there from its start to its end is listed (on
//! Redis possibly twice, if the keyspace is resized meanwhile). What the
//! stores move aside (the doctor's quarantine) and a put's temporary files
//! are not listed.

use crate::{Namespace, PasteKey, RecordInfo, RecordProblem, StoreError};

/// One page of a listing and the cursor of the next (`None`: this was the
/// last page).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T> {
    /// What this page holds.
    pub items: Vec<T>,
    /// The cursor to pass for the next page; `None` at the end.
    pub next: Option<String>,
}

/// A name at the top of a store: a namespace, or something else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopLevel {
    /// A namespace that holds (or held) entries: its pastes and its review
    /// blobs.
    Namespace(Namespace),
    /// A name the store never writes at its top (the backend's name for
    /// it): not a namespace, and not what the store keeps beside them.
    Unknown(String),
}

/// What a listed name is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A paste.
    Paste(PasteKey),
    /// A review blob.
    ReviewBlob(PasteKey),
    /// A name the store never writes (within a namespace, or, in a listing
    /// of the whole store, anywhere under it).
    Unknown,
}

impl EntryKind {
    /// The key of a paste or review blob.
    pub fn key(&self) -> Option<&PasteKey> {
        match self {
            EntryKind::Paste(key) | EntryKind::ReviewBlob(key) => Some(key),
            EntryKind::Unknown => None,
        }
    }
}

/// A stored record's head: its length, what its header says, and the
/// store's tag of that exact value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordHead {
    /// The value's whole length in bytes.
    pub len: u64,
    /// What the header says, or why the value is not a readable record
    /// ([`inspect_record`](crate::inspect_record): the magic and format
    /// version, the header's checksum, flags and digest, the payload's
    /// length). A text payload's encoding is not checked here
    /// ([`StoreInventory::check_payload`]).
    pub header: Result<RecordInfo, RecordProblem>,
    /// The store's tag of this exact value where it has one (S3: the
    /// ETag; fs: the inode number), so that a repair can act on the value
    /// that was checked and on no newer one.
    pub tag: Option<String>,
}

/// One listed name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventoryEntry {
    /// The backend's name for it: a file's path, a Redis key, an object key.
    pub name: String,
    /// What the name says it is.
    pub kind: EntryKind,
    /// Its record's head (a paste or review blob; `None` for an unknown
    /// name, whose value is not read).
    pub record: Option<RecordHead>,
}

/// A store's contents, a page at a time (see the module's documentation
/// for the paging contract). Every backend implements it, and the
/// conformance suite (`conformance::inventory`) checks it.
#[async_trait::async_trait]
pub trait StoreInventory: Send + Sync + std::fmt::Debug {
    /// Short name of the backend (`"fs"`, `"memory"`, …).
    fn backend(&self) -> &'static str;

    /// The name a listing gives the value of `key` (whether or not one is
    /// stored).
    fn location(&self, key: &PasteKey) -> String;

    /// One page of the namespaces that hold entries, and of the names at
    /// the store's top that are no namespace, in name order, each once.
    /// `after`: the cursor of the previous page.
    async fn namespaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<TopLevel>, StoreError>;

    /// One page of the entries of `namespace` (`None`: of the whole
    /// store, every namespace and the unknown names beside them), each
    /// with its record's head. The order is the backend's: name order on
    /// fs (pastes in the byte order of their ids), S3 and memory; none on
    /// Redis.
    async fn entries(
        &self,
        namespace: Option<&Namespace>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<InventoryEntry>, StoreError>;

    /// Whether a value — live, expired or damaged — is stored under each
    /// of `keys`, in their order.
    async fn contains(&self, keys: &[PasteKey]) -> Result<Vec<bool>, StoreError>;

    /// What a listing leaves out: the payload of `entry` read whole and a
    /// text payload's encoding checked. `Ok(None)`: the value is gone;
    /// `Ok(Some(Err(_)))`: it is not readable as a paste.
    async fn check_payload(
        &self,
        entry: &InventoryEntry,
    ) -> Result<Option<Result<(), RecordProblem>>, StoreError>;
}

/// The head of a record from its first bytes and its whole length.
pub(crate) fn head_of(head: &[u8], len: u64, tag: Option<String>) -> RecordHead {
    RecordHead {
        len,
        header: crate::inspect_record(head, len).map_err(|(problem, _)| problem),
        tag,
    }
}

/// The payload check of a whole record: its header, then a text payload's
/// encoding.
pub(crate) fn check_whole(bytes: &[u8]) -> Result<(), RecordProblem> {
    let info = crate::inspect_record(bytes, bytes.len() as u64).map_err(|(problem, _)| problem)?;
    if info.text {
        crate::check_record_text(bytes.get(crate::RECORD_HEADER_LEN..).unwrap_or(&[]))?;
    }
    Ok(())
}

/// The entries of `sorted` (names in order, each with what it is) after
/// `cursor`, at most `limit`, and the cursor of the next page; for the
/// backends that can list in name order.
pub(crate) fn page_after<T: Clone>(
    sorted: &[(String, T)],
    cursor: Option<&str>,
    limit: usize,
) -> (Vec<(String, T)>, Option<String>) {
    let start = match cursor {
        Some(after) => sorted.partition_point(|(name, _)| name.as_str() <= after),
        None => 0,
    };
    let end = start.saturating_add(limit.max(1)).min(sorted.len());
    let items = sorted[start..end].to_vec();
    let next = (end < sorted.len())
        .then(|| items.last().map(|(name, _)| name.clone()))
        .flatten();
    (items, next)
}

//! The S3 store as the doctor sees it: its listing ([`StoreInventory`]:
//! its objects a listing page at a time, the heads of their records by
//! ranged `GetObject`s, no payloads), and the repairs.
//!
//! Object keys are `<prefix><namespace>/<id>` (a paste) and
//! `<prefix><namespace>/r/<id>` (a review blob). A damaged object is copied
//! to `<prefix>.quarantine/<namespace>/…` and then deleted (S3 has no
//! rename); a read of its key then answers "damaged". Every repair is
//! conditional on the ETag of the object that was checked: a paste stored
//! under the key since (a put replaces an expired object) is never touched.

use tokio::task::JoinSet;

use super::{
    DeleteOutcome, S3Store, is_no_such_key, status_and_code, unavailable, unreadable_body,
};
use crate::backends::keyed::{self, QUARANTINE, StoredKeyKind, ValueHead};
use crate::inventory::{EntryKind, InventoryEntry, Page, StoreInventory, TopLevel, check_whole};
use crate::{Namespace, PasteKey, RECORD_HEADER_LEN, RecordProblem, StoreError};

/// Requests in flight at once for the per-object calls of a page.
const IN_FLIGHT: usize = 32;

/// What a conditional repair did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum S3Repair {
    /// Done; for a move, the object's new key.
    Done(Option<String>),
    /// The object is gone, or is no longer the one that was checked.
    Changed,
}

impl S3Store {
    /// The prefix of every object key the store writes.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The object key of `key`.
    pub fn object_name(&self, key: &PasteKey) -> String {
        key.object_key(&self.prefix)
    }

    /// What the object key `name` (as a listing gives it) is.
    pub(crate) fn classify(&self, name: &str) -> StoredKeyKind {
        keyed::classify(&self.prefix, '/', name)
    }

    /// One listing page (up to `limit` keys, at most 1 000) of the objects
    /// under the store's prefix followed by `within`, after the
    /// continuation token `after`; with `delimited`, the keys with no
    /// further `/` and the common prefixes up to the next one (the
    /// "directories"). The keys, the common prefixes and the token of the
    /// next page (`None` at the end).
    async fn list_page(
        &self,
        within: &str,
        after: Option<&str>,
        limit: usize,
        delimited: bool,
    ) -> Result<(Vec<String>, Vec<String>, Option<String>), StoreError> {
        let max_keys = i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000);
        let listed = self
            .within(async {
                self.client
                    .list_objects_v2()
                    .bucket(&self.bucket)
                    .prefix(format!("{}{within}", self.prefix))
                    .set_delimiter(delimited.then(|| "/".to_owned()))
                    .max_keys(max_keys)
                    .set_continuation_token(after.map(str::to_owned))
                    .send()
                    .await
                    .map_err(|err| unavailable("ListObjectsV2", &err))
            })
            .await?;
        let keys = listed
            .contents()
            .iter()
            .filter_map(|object| object.key().map(str::to_owned))
            .collect();
        let prefixes = listed
            .common_prefixes()
            .iter()
            .filter_map(|p| p.prefix().map(str::to_owned))
            .collect();
        let next = listed
            .is_truncated()
            .unwrap_or(false)
            .then(|| listed.next_continuation_token().map(str::to_owned))
            .flatten();
        Ok((keys, prefixes, next))
    }

    /// The head, length and ETag of each object of `names`; `None` for one
    /// that is gone.
    pub(crate) async fn heads(
        &self,
        names: &[String],
    ) -> Result<Vec<Option<ValueHead>>, StoreError> {
        self.each(names, |store, name| async move {
            store.within(store.head_of(&name)).await
        })
        .await
    }

    /// Whether each object of `names` exists.
    pub(crate) async fn exist(&self, names: &[String]) -> Result<Vec<bool>, StoreError> {
        self.each(names, |store, name| async move {
            store.within(store.exists(&name)).await
        })
        .await
    }

    /// The whole object `name`, if it is there.
    pub async fn object(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .within(self.fetch(name))
            .await?
            .map(|fetched| fetched.bytes))
    }

    /// Moves the object `name` into the quarantine: a copy (metadata kept)
    /// and then a delete, both only if the object is still the one whose
    /// head was read (`tag`, its ETag, as the listing gave it).
    pub async fn quarantine(&self, name: &str, tag: Option<&str>) -> Result<S3Repair, StoreError> {
        let Some(dest) = keyed::quarantine_name(&self.prefix, '/', name) else {
            return Err(StoreError::internal("a key outside the store's prefix"));
        };
        let copied = self
            .within(async {
                match self
                    .client
                    .copy_object()
                    .bucket(&self.bucket)
                    .key(&dest)
                    .copy_source(copy_source(&self.bucket, name))
                    .set_copy_source_if_match(tag.map(str::to_owned))
                    .send()
                    .await
                {
                    Ok(_) => Ok(true),
                    // Gone, or no longer the object that was checked.
                    Err(err) if is_no_such_key(&err) => Ok(false),
                    Err(err) if matches!(status_and_code(&err).0, Some(412)) => Ok(false),
                    Err(err) => Err(unavailable("CopyObject", &err)),
                }
            })
            .await?;
        if !copied {
            return Ok(S3Repair::Changed);
        }
        // A damaged object is never replaced by a put (the write path
        // leaves it for the operator), so a server without conditional
        // deletes may delete it plainly.
        let mut outcome = self.within(self.delete_object(name, tag)).await?;
        if outcome == DeleteOutcome::NotImplemented {
            outcome = self.within(self.delete_object(name, None)).await?;
        }
        Ok(match outcome {
            DeleteOutcome::Deleted => S3Repair::Done(Some(dest)),
            DeleteOutcome::Conflict | DeleteOutcome::NotImplemented => S3Repair::Changed,
        })
    }

    /// Deletes the expired object `name` if it is still the one whose head
    /// was read (`tag`, its ETag): a put may have replaced it with a live
    /// paste meanwhile. Without an ETag, or on a server without conditional
    /// deletes, the object is left for the bucket's lifecycle rule.
    pub async fn remove_expired(
        &self,
        name: &str,
        tag: Option<&str>,
    ) -> Result<S3Repair, StoreError> {
        let Some(tag) = tag else {
            return Ok(S3Repair::Changed);
        };
        Ok(
            match self.within(self.delete_object(name, Some(tag))).await? {
                DeleteOutcome::Deleted => S3Repair::Done(None),
                DeleteOutcome::Conflict | DeleteOutcome::NotImplemented => S3Repair::Changed,
            },
        )
    }

    /// Why the paste `name` is missing: moved aside by `doctor --repair`
    /// (damaged: the read answers so), else not found.
    pub(super) async fn missing(&self, name: &str) -> StoreError {
        let Some(quarantined) = keyed::quarantine_name(&self.prefix, '/', name) else {
            return StoreError::NotFound;
        };
        match self.exists(&quarantined).await {
            Ok(true) => StoreError::damaged(format!(
                "damaged, moved aside by planshare-server doctor: {quarantined}"
            )),
            Ok(false) => StoreError::NotFound,
            Err(e) => e,
        }
    }

    /// A ranged `GetObject` of the record header.
    async fn head_of(&self, name: &str) -> Result<Option<ValueHead>, StoreError> {
        let output = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(name)
            .range(format!("bytes=0-{}", RECORD_HEADER_LEN - 1))
            .send()
            .await
        {
            Ok(output) => output,
            Err(err) if is_no_such_key(&err) => return Ok(None),
            // 416: an empty object has no first byte.
            Err(err) if matches!(status_and_code(&err).0, Some(416)) => {
                return Ok(self.exists(name).await?.then(|| ValueHead {
                    head: Vec::new(),
                    len: 0,
                    tag: None,
                }));
            }
            Err(err) => return Err(unavailable("GetObject", &err)),
        };
        let tag = output.e_tag().map(str::to_owned);
        // "bytes 0-63/1234": the total after the slash. A server that
        // ignores the range sends the whole object: then its length.
        let total = output
            .content_range()
            .and_then(|range| range.rsplit_once('/'))
            .and_then(|(_, total)| total.parse::<u64>().ok());
        let mut head = Vec::with_capacity(RECORD_HEADER_LEN);
        let mut read = 0u64;
        let mut body = output.body;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| unreadable_body(&e))?;
            let room = RECORD_HEADER_LEN
                .saturating_sub(head.len())
                .min(chunk.len());
            head.extend_from_slice(&chunk[..room]);
            read += chunk.len() as u64;
        }
        Ok(Some(ValueHead {
            head,
            len: total.unwrap_or(read),
            tag,
        }))
    }

    /// A `HeadObject` of `name`.
    async fn exists(&self, name: &str) -> Result<bool, StoreError> {
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(name)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(err) if err.as_service_error().is_some_and(|e| e.is_not_found()) => Ok(false),
            Err(err) if matches!(status_and_code(&err).0, Some(404)) => Ok(false),
            Err(err) => Err(unavailable("HeadObject", &err)),
        }
    }

    /// `call` for each of `names`, [`IN_FLIGHT`] at a time; the answers in
    /// the order of `names`.
    async fn each<T, F, Fut>(&self, names: &[String], call: F) -> Result<Vec<T>, StoreError>
    where
        T: Send + 'static,
        F: Fn(S3Store, String) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let mut answers = Vec::with_capacity(names.len());
        for batch in names.chunks(IN_FLIGHT) {
            let mut calls = JoinSet::new();
            for (i, name) in batch.iter().enumerate() {
                let call = call(self.clone(), name.clone());
                calls.spawn(async move { (i, call.await) });
            }
            let mut batch_answers: Vec<Option<T>> = (0..batch.len()).map(|_| None).collect();
            while let Some(joined) = calls.join_next().await {
                let (i, answer) =
                    joined.map_err(|e| StoreError::internal(format!("an S3 call failed: {e}")))?;
                batch_answers[i] = Some(answer?);
            }
            answers.extend(batch_answers.into_iter().flatten());
        }
        Ok(answers)
    }
}

/// The S3 store's listing: `ListObjectsV2` pages (in key order; the
/// cursor is S3's continuation token), the heads read by ranged
/// `GetObject`s, a few at a time. The namespaces are the listing's common
/// prefixes up to the first `/` after the store's prefix; the objects
/// directly under the prefix, and the prefixes that are no namespace, are
/// unknown names at the top.
#[async_trait::async_trait]
impl StoreInventory for S3Store {
    fn backend(&self) -> &'static str {
        "s3"
    }

    fn location(&self, key: &PasteKey) -> String {
        self.object_name(key)
    }

    async fn namespaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<TopLevel>, StoreError> {
        let (keys, prefixes, next) = self.list_page("", after, limit, true).await?;
        let mut sorted: Vec<(String, TopLevel)> = Vec::with_capacity(keys.len() + prefixes.len());
        for prefix in prefixes {
            let rest = prefix.strip_prefix(&self.prefix).unwrap_or(&prefix);
            let segment = rest.strip_suffix('/').unwrap_or(rest);
            if segment == QUARANTINE {
                continue;
            }
            let top = match Namespace::parse(segment) {
                Ok(ns) => TopLevel::Namespace(ns),
                Err(_) => TopLevel::Unknown(prefix.clone()),
            };
            sorted.push((prefix, top));
        }
        sorted.extend(
            keys.into_iter()
                .map(|key| (key.clone(), TopLevel::Unknown(key))),
        );
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Page {
            items: sorted.into_iter().map(|(_, top)| top).collect(),
            next,
        })
    }

    async fn entries(
        &self,
        namespace: Option<&Namespace>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<InventoryEntry>, StoreError> {
        let within = namespace.map(|ns| format!("{ns}/")).unwrap_or_default();
        let (names, _, next) = self.list_page(&within, cursor, limit, false).await?;
        let (listed, records) = keyed::classified(names, |name| self.classify(name));
        let heads = self.heads(&records).await?;
        let items = keyed::with_heads(listed, heads);
        Ok(Page { items, next })
    }

    async fn contains(&self, keys: &[PasteKey]) -> Result<Vec<bool>, StoreError> {
        let names: Vec<String> = keys.iter().map(|key| self.object_name(key)).collect();
        self.exist(&names).await
    }

    async fn check_payload(
        &self,
        entry: &InventoryEntry,
    ) -> Result<Option<Result<(), RecordProblem>>, StoreError> {
        if entry.kind == EntryKind::Unknown {
            return Ok(None);
        }
        Ok(self
            .object(&entry.name)
            .await?
            .map(|bytes| check_whole(&bytes)))
    }
}

/// The `x-amz-copy-source` of `key` in `bucket`: URL-encoded, slashes kept.
fn copy_source(bucket: &str, key: &str) -> String {
    let mut out = format!("{bucket}/");
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::copy_source;

    #[test]
    fn copy_sources_are_url_encoded_with_slashes_kept() {
        assert_eq!(
            copy_source("b", "pastes/team-a/AbCd1234"),
            "b/pastes/team-a/AbCd1234"
        );
        assert_eq!(copy_source("b", "a b/ü+"), "b/a%20b/%C3%BC%2B");
    }
}

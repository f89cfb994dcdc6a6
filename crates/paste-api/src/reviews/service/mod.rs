//! Live shared reviews, with no HTTP in them: creating a review, finding
//! who a token belongs to, versions, reviewer links, comment sets, the
//! owner's decision, deletion, and the event fan-out ([`hub`]) that streams
//! read.
//!
//! Content never reaches the catalog: each version, comment set and
//! feedback is a blob in the paste store under the tenant's namespace
//! (`PasteKey::review_blob`, which no paste id reaches), written and made
//! durable *before* the catalog transaction that names it. So an
//! acknowledged change is never missing its blob; a crash between the two
//! leaves at worst an unnamed blob, which expires with the review. A blob
//! the catalog stops naming (a replaced comment set, a deleted review) is
//! removed after the commit.
//!
//! [`ReviewService`] answers plain values or a [`ReviewError`]; the handlers
//! map them (`error.rs`).

mod context;
mod error;
pub(crate) mod hub;
mod ops;
pub(crate) mod stream;
#[cfg(test)]
mod tests;
mod tokens;

pub(crate) use context::ReviewService;
pub(crate) use error::ReviewError;
pub(crate) use ops::{
    Admit, Caller, Decision, DecisionInput, NewReviewInput, ReviewRead, VersionPush,
    presented_digest,
};

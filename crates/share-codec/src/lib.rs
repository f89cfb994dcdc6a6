//! The Plannotator share format, as pure functions: the payload model
//! ([`SharePayload`], annotation tuples) and its `JSON.stringify`-exact
//! serialisation, deflate-raw + base64url compression with a forgiving,
//! bounded decoder, AES-GCM encryption as upstream's WebCrypto code does it,
//! and building and parsing share links. The formats are described in
//! `docs/wire-format.md` at the workspace root.
//!
//! Pure: no I/O, no async, no networking, no clock (only the system random
//! generator, for fresh keys and IVs). This crate must not depend on tokio,
//! axum, storage or any other workspace crate; everything above it (the CLI,
//! the server, `plan-doc`) may depend on it.
//!
//! # Layout
//! - `annotation.rs` — the editor's [`Annotation`] object (start here);
//! - `tuple.rs` — annotations ⇄ wire tuples, image entries;
//! - `payload.rs` — [`SharePayload`] ⇄ the wire object `{p, a, g, d, s, h, r}`;
//! - `json.rs` — `JSON.stringify`-exact output;
//! - `b64.rs` — base64url out, browser `atob` in;
//! - `compress.rs` — raw DEFLATE + base64url, bounded inflate;
//! - `crypto.rs` — AES-GCM with the key in the link;
//! - `link.rs` — hash and short links, upstream's URL parsers;
//! - `share.rs` — the whole pipeline in one call each way;
//! - `review.rs` — live reviews: the plan digest, review links;
//! - `size.rs` — size labels; `error.rs` — [`CodecError`].

pub mod annotation;
pub mod b64;
pub mod compress;
pub mod crypto;
pub mod error;
pub mod json;
pub mod link;
pub mod payload;
pub mod review;
pub mod share;
pub mod size;
pub mod tuple;

pub use annotation::{Annotation, AnnotationType, ImageAttachment};
pub use b64::{decode_forgiving, encode_base64url};
pub use compress::{DEFAULT_MAX_INFLATED_BYTES, compress, decompress};
pub use crypto::{ShareKey, decrypt, encrypt, encrypt_with};
pub use error::{CodecError, EMPTY_HASH, NO_HASH_OR_SHORT_LINK};
pub use json::Json;
pub use link::{
    Callback, DEFAULT_PASTE_API, DEFAULT_SHARE_BASE, ShareLink, decode_paste_api_param,
    encode_paste_api_param, hash_url, looks_like_share_payload, match_portal_route, parse_callback,
    parse_hash_fragment, parse_import_url, parse_share_link, short_url,
};
pub use payload::SharePayload;
pub use review::{
    ReviewLink, hmac_sha256_b64url, is_review_link, parse_review_link, plan_digest, review_url,
};
pub use share::{decode_hash, decode_paste, encode_hash, encrypt_payload};
pub use size::{format_size, format_url_size};
pub use tuple::{
    TupleLayout, from_shareable, image_name_from_path, parse_shareable_images, to_shareable,
};

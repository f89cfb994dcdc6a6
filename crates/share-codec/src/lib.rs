//! The Plannotator share format, as pure functions: the payload model and its
//! `JSON.stringify`-exact serialisation, annotation tuples, deflate-raw +
//! base64url compression, AES-256-GCM encryption as upstream's WebCrypto code
//! does it, and building and parsing share links. Formats: `shared/WIRE.md`
//! §2–§5.
//!
//! Pure: no I/O, no async, no networking, no clock. This crate must not depend
//! on tokio, axum, storage or any other workspace crate; everything above it
//! (the CLI, the server, `plan-doc`) may depend on it. Start at [`Annotation`]
//! (the editor's annotation object).

pub mod annotation;

pub use annotation::{Annotation, AnnotationType, ImageAttachment};

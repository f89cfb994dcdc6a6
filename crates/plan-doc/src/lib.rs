//! Plan documents: markdown split into blocks with source line numbers,
//! annotations re-anchored in the plan text, and the feedback export that
//! upstream's `exportAnnotations` produces.
//!
//! Pure: no I/O, no async. Depends only on `share-codec` (for the annotation
//! model); must not depend on HTTP, storage or anything with side effects.

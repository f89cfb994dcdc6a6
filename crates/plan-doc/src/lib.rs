//! Plan documents: markdown split into blocks with source line numbers,
//! annotations re-anchored in the plan text, and the feedback export that
//! upstream's `exportAnnotations` produces.
//!
//! Pure: no I/O, no async. Depends only on `share-codec` (for the annotation
//! model) and `serde_json` (comment sets' thread fields); must not depend on
//! HTTP, storage or anything with side effects. `threads.rs` holds the
//! review threads' rules ([`threads`]), `progress.rs` the progress-push
//! check ([`only_checklist_marks_differ`]).
//!
//! Where to start reading: [`parse_blocks`] in `blocks.rs` (the block model
//! every other part is keyed on), then [`reanchor`] in `anchor.rs` (finding
//! shared annotations' text again), then [`export_annotations`] in
//! `export.rs` (the feedback text, byte for byte as upstream writes it).
//! `render.rs` gives each block's rendered text ([`Block::rendered_text`]:
//! what upstream's viewer shows, with a map back to the source) for the
//! re-anchoring of text selected in the rendered page.
//! `refs.rs`, `html.rs` and `text.rs` are private helpers of the parser:
//! reference-link resolution, HTML block extents and JavaScript string
//! semantics. The formats are described where they are implemented
//! (`anchor.rs`, `export.rs`) and pinned by the vectors in `testdata/`.

mod anchor;
mod blocks;
mod export;
mod html;
mod progress;
mod refs;
mod render;
mod steps;
mod text;
mod threads;

pub use anchor::{
    Anchor, AnchorHow, DEFAULT_SEARCH_BUDGET, Reanchored, anchor_annotation, anchor_annotations,
    anchor_annotations_with_budget, find_text, reanchor, reanchor_blocks, reanchor_with_budget,
};
pub use blocks::{AlertKind, Block, BlockKind, ParseOptions, parse_blocks, parse_blocks_with};
pub use export::{
    DEFAULT_SUBJECT, DEFAULT_TITLE, ExportOptions, export_annotations, export_annotations_with,
    line_label,
};
pub use progress::only_checklist_marks_differ;
pub use render::{RenderedText, render_inline};
pub use steps::{Step, StepState, Steps, plan_steps};
pub use threads::{Entry, Reply, Root, Thread, WriterSet, is_thread_id, may_change_state, threads};

//! The annotation object of the upstream editor (`Annotation` in upstream's
//! `types.ts`), as the CLI reads it from JSON and as shares restore it.
//! Fields that are never shared (ids, offsets, …) are kept for export and
//! re-anchoring but do not travel in a payload.

use serde::{Deserialize, Serialize};

/// What kind of feedback an annotation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AnnotationType {
    /// "Remove this" on `original_text` (tuple letter `D`).
    Deletion,
    /// A comment on `original_text` (tuple letter `C`).
    Comment,
    /// A comment on the whole plan (tuple letter `G`).
    GlobalComment,
    /// Legacy (before 2026-03-29): replace `original_text` by `text` (letter `R`).
    Replacement,
    /// Legacy (before 2026-03-29): insert `text` at `original_text` (letter `I`).
    Insertion,
}

/// An attached image: only its path and display name travel, never its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImageAttachment {
    /// Local file path or URL.
    pub path: String,
    /// Display name.
    pub name: String,
}

/// One annotation, in upstream's object shape (camelCase JSON).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotation {
    /// Editor id; restored shares use `shared-<index>`.
    #[serde(default)]
    pub id: String,
    /// Id of the block the annotation sits in (`""` when unknown).
    #[serde(default)]
    pub block_id: String,
    /// Offset of the highlight inside its block.
    #[serde(default)]
    pub start_offset: u64,
    /// End offset of the highlight (upstream keeps 0 for restored annotations).
    #[serde(default)]
    pub end_offset: u64,
    /// The kind; `None` for an unknown tuple letter (upstream: `undefined`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<AnnotationType>,
    /// The annotated text of the plan (`""` for global comments).
    #[serde(default)]
    pub original_text: String,
    /// The reviewer's comment (or replacement/insertion text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The reviewer's display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Attached images.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nullable_vec"
    )]
    pub images: Vec<ImageAttachment>,
    /// A quick-label comment (`text` is the label).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_quick_label: bool,
    /// The quick label's tip (never shared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick_label_tip: Option<String>,
    /// `added`, `removed` or `modified` for annotations on diff content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_context: Option<String>,
    /// Id of an external tool that produced it (e.g. `eslint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Creation time in Unix ms (never shared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_a: Option<u64>,
}

fn nullable_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_objects_deserialize() {
        let a: Annotation = serde_json::from_str(
            r#"{"id":"ann-40","blockId":"block-2","startOffset":4,"endOffset":0,"createdA":1700000000040,
                "originalText":"auth middleware","type":"COMMENT","text":"rate limit login",
                "images":[{"path":"/tmp/plannotator/a.png","name":"a"}],"isQuickLabel":true}"#,
        )
        .unwrap();
        assert_eq!(a.kind, Some(AnnotationType::Comment));
        assert_eq!(a.block_id, "block-2");
        assert_eq!(a.images[0].name, "a");
        assert!(a.is_quick_label);
        let g: Annotation =
            serde_json::from_str(r#"{"type":"GLOBAL_COMMENT","text":"x","images":null}"#).unwrap();
        assert_eq!(g.kind, Some(AnnotationType::GlobalComment));
        assert!(g.images.is_empty());
    }
}

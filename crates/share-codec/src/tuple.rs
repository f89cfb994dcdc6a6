//! Annotation tuples (`a[i]`) and image entries, in both directions: upstream's
//! `toShareable` / `toShareableImages` and `fromShareable` /
//! `parseShareableImages` (`docs/wire-format.md`, "Annotation tuples").
//!
//! Written (newest layout, [`TupleLayout::Current`]):
//!
//! | kind | tuple |
//! |---|---|
//! | deletion | `["D", originalText, author\|null, images\|null]` |
//! | comment | `["C", originalText, text, author\|null, images\|null]` (+ `1` for a quick label) |
//! | global comment | `["G", text, author\|null, images\|null]` |
//! | replacement / insertion | `["R"\|"I", originalText, text, author\|null, images\|null]` |
//! | unknown (`kind: None`) | `["X", originalText, text, author\|null, images\|null]` |
//!
//! Replacement and insertion were removed upstream on 2026-03-29; the
//! 5-element `R`/`I` tuples are what upstream's encoder wrote between
//! 2026-02-12 and then (`ann.type[0]` in the comment layout). An annotation
//! without a kind only arises from decoding an unknown letter; upstream cannot
//! re-share those at all (it throws), so they are written with the letter `X`,
//! which every upstream decoder reads back as an unknown type.
//!
//! Read: every rule of upstream's newest `fromShareable`, except that `R`/`I`
//! decode as replacement/insertion (a planshare decision: links made while
//! upstream still wrote them keep their meaning) instead of an unknown type. Values of an unexpected JSON type
//! are treated as absent (an `originalText` that is not a string becomes
//! `""`), where upstream would carry them through or crash later.

use serde_json::Value;

use crate::annotation::{Annotation, AnnotationType, ImageAttachment};
use crate::error::CodecError;
use crate::json::Json;

/// Which generation of upstream's encoder to imitate when writing tuples.
///
/// Only [`TupleLayout::Current`] is used for real shares; the older layouts
/// exist to produce links exactly as old clients did (fixtures, compatibility
/// tests). Every layout decodes with the same [`from_shareable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TupleLayout {
    /// Newest (since 2026-02-12, #147): images slot always written, images as
    /// `[path, name]`, quick-label flag, `g`/`d`/`s`/`h`/`r` keys.
    #[default]
    Current,
    /// 2026-01-05 – 2026-02-11 (386a9e6): images as plain path strings, `g` as
    /// a list of paths; no quick label, no `d`/`s`/`h`/`r`.
    PathImages,
    /// 2025-12-27 – 2026-01-04 (34297b5): no images slot at all
    /// (`["D", orig, author]`, `["C"|"R"|"I", orig, text, author]`,
    /// `["G", text, author]`), only the keys `p` and `a`.
    Original,
}

/// The tuple letter written for an annotation kind (`X` for no kind).
pub fn type_letter(kind: Option<AnnotationType>) -> &'static str {
    match kind {
        Some(AnnotationType::Deletion) => "D",
        Some(AnnotationType::Comment) => "C",
        Some(AnnotationType::GlobalComment) => "G",
        Some(AnnotationType::Replacement) => "R",
        Some(AnnotationType::Insertion) => "I",
        None => "X",
    }
}

/// The kind a tuple letter decodes to; `None` for any unknown letter.
pub fn kind_from_letter(letter: &str) -> Option<AnnotationType> {
    match letter {
        "D" => Some(AnnotationType::Deletion),
        "C" => Some(AnnotationType::Comment),
        "G" => Some(AnnotationType::GlobalComment),
        "R" => Some(AnnotationType::Replacement),
        "I" => Some(AnnotationType::Insertion),
        _ => None,
    }
}

/// Upstream's `toShareable`: the `a` array for `annotations`.
///
/// Missing text is written as `""`, a missing or empty author as `null`, no
/// images as `null`; deletions drop `text`, global comments drop
/// `originalText`; ids, offsets, `createdA`, `quickLabelTip`, `diffContext`
/// and `source` never go into a tuple.
pub fn to_shareable(annotations: &[Annotation], layout: TupleLayout) -> Json<'_> {
    Json::Array(
        annotations
            .iter()
            .map(|a| annotation_tuple(a, layout))
            .collect(),
    )
}

fn annotation_tuple(ann: &Annotation, layout: TupleLayout) -> Json<'_> {
    let letter = type_letter(ann.kind);
    let author = Json::str_or_null(ann.author.as_deref().filter(|s| !s.is_empty()));
    let text = Json::Str(ann.text.as_deref().unwrap_or(""));
    let mut tuple = vec![Json::Str(letter)];
    match ann.kind {
        Some(AnnotationType::GlobalComment) => tuple.extend([text, author]),
        Some(AnnotationType::Deletion) => tuple.extend([Json::Str(&ann.original_text), author]),
        _ => tuple.extend([Json::Str(&ann.original_text), text, author]),
    }
    if layout != TupleLayout::Original {
        tuple.push(to_shareable_images(&ann.images, layout));
    }
    if layout == TupleLayout::Current
        && ann.is_quick_label
        && ann.kind == Some(AnnotationType::Comment)
    {
        tuple.push(Json::Int(1));
    }
    Json::Array(tuple)
}

/// Upstream's `toShareableImages`: `null` for no images, else `[[path, name], …]`
/// (or plain paths for [`TupleLayout::PathImages`]).
pub fn to_shareable_images(images: &[ImageAttachment], layout: TupleLayout) -> Json<'_> {
    if images.is_empty() {
        return Json::Null;
    }
    Json::Array(
        images
            .iter()
            .map(|img| match layout {
                TupleLayout::Current => {
                    Json::Array(vec![Json::Str(&img.path), Json::Str(&img.name)])
                }
                TupleLayout::PathImages | TupleLayout::Original => Json::Str(&img.path),
            })
            .collect(),
    )
}

/// Upstream's `fromShareable(a, d, s)`: restores annotation objects.
///
/// Restored annotations get `id = "shared-<index>"` (upstream appends
/// `-<Date.now()>`; this crate has no clock), `blockId = ""`, offsets 0 and no
/// `createdA`. `d` and `s` are the parallel `diffContext` / `source` arrays;
/// only non-empty strings are taken, and `d` is ignored for global comments.
///
/// # Errors
/// [`CodecError::NotAPayload`] when an item of `a` is not an array.
pub fn from_shareable(
    a: &[Value],
    d: Option<&[Value]>,
    s: Option<&[Value]>,
) -> Result<Vec<Annotation>, CodecError> {
    a.iter()
        .enumerate()
        .map(|(index, item)| {
            let Value::Array(item) = item else {
                return Err(CodecError::NotAPayload(format!(
                    "annotation {index} is not an array"
                )));
            };
            let mut ann = annotation_from_tuple(item);
            ann.id = format!("shared-{index}");
            if ann.kind != Some(AnnotationType::GlobalComment) {
                ann.diff_context = parallel_string(d, index);
            }
            ann.source = parallel_string(s, index);
            Ok(ann)
        })
        .collect()
}

fn annotation_from_tuple(item: &[Value]) -> Annotation {
    let letter = item.first().and_then(Value::as_str).unwrap_or("");
    let kind = kind_from_letter(letter);
    let at = |i: usize| item.get(i).unwrap_or(&Value::Null);
    let (original_text, text, author, images) = match letter {
        "G" => (
            String::new(),
            truthy_string(at(1)),
            truthy_string(at(2)),
            at(3),
        ),
        "D" => (string_or_empty(at(1)), None, truthy_string(at(2)), at(3)),
        _ => (
            string_or_empty(at(1)),
            truthy_string(at(2)),
            truthy_string(at(3)),
            at(4),
        ),
    };
    let is_quick_label = letter == "C" && item.len() > 5 && at(5).as_f64() == Some(1.0);
    Annotation {
        kind,
        original_text,
        text,
        author,
        images: parse_shareable_images(images),
        is_quick_label,
        ..Annotation::default()
    }
}

/// `value || undefined` for string slots: a non-empty string, else `None`.
fn truthy_string(value: &Value) -> Option<String> {
    value.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

fn string_or_empty(value: &Value) -> String {
    value.as_str().unwrap_or("").to_owned()
}

fn parallel_string(array: Option<&[Value]>, index: usize) -> Option<String> {
    array.and_then(|a| a.get(index)).and_then(truthy_string)
}

/// Upstream's `parseShareableImages`: `[path, name]` entries and legacy plain
/// path strings (name from [`image_name_from_path`]). `null`, a missing slot,
/// an empty array or a non-array give no images. Entries that are neither a
/// string nor an array starting with a string are skipped; an array entry
/// without a string name gets the name derived from its path.
pub fn parse_shareable_images(raw: &Value) -> Vec<ImageAttachment> {
    let Value::Array(entries) = raw else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|entry| match entry {
            Value::String(path) => Some(ImageAttachment {
                path: path.clone(),
                name: image_name_from_path(path),
            }),
            Value::Array(pair) => {
                let path = pair.first()?.as_str()?;
                let name = match pair.get(1).and_then(Value::as_str) {
                    Some(name) => name.to_owned(),
                    None => image_name_from_path(path),
                };
                Some(ImageAttachment {
                    path: path.to_owned(),
                    name,
                })
            }
            _ => None,
        })
        .collect()
}

/// The display name upstream derives from a legacy plain-path image: the last
/// `/`-separated segment with its final `.ext` removed, or `"image"` when that
/// is empty. Backslashes are not separators.
///
/// ```
/// use share_codec::image_name_from_path;
/// assert_eq!(image_name_from_path("/tmp/a.tar.gz"), "a.tar");
/// assert_eq!(image_name_from_path("dir/"), "image");
/// assert_eq!(image_name_from_path(".hidden"), "image");
/// ```
pub fn image_name_from_path(path: &str) -> String {
    let segment = path.rsplit('/').next().unwrap_or(path);
    // `/\.[^.]+$/`: only the last dot can match, and only when something follows it.
    let stem = match segment.rfind('.') {
        Some(dot) if dot + 1 < segment.len() => &segment[..dot],
        _ => segment,
    };
    if stem.is_empty() {
        "image".to_owned()
    } else {
        stem.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_follow_upstream_regex() {
        assert_eq!(image_name_from_path("noext"), "noext");
        assert_eq!(image_name_from_path("a."), "a.");
        assert_eq!(image_name_from_path("x/y.v2.jpeg"), "y.v2");
        assert_eq!(image_name_from_path(""), "image");
        assert_eq!(image_name_from_path(r"C:\w\img.png"), r"C:\w\img");
    }

    #[test]
    fn legacy_layouts_write_the_old_tuple_shapes() {
        let anns = [Annotation {
            kind: Some(AnnotationType::Comment),
            original_text: "o".into(),
            text: Some("t".into()),
            images: vec![ImageAttachment {
                path: "/a.png".into(),
                name: "a".into(),
            }],
            is_quick_label: true,
            ..Annotation::default()
        }];
        let json = |layout| to_shareable(&anns, layout).stringify();
        assert_eq!(
            json(TupleLayout::Current),
            r#"[["C","o","t",null,[["/a.png","a"]],1]]"#
        );
        assert_eq!(
            json(TupleLayout::PathImages),
            r#"[["C","o","t",null,["/a.png"]]]"#
        );
        assert_eq!(json(TupleLayout::Original), r#"[["C","o","t",null]]"#);
    }

    #[test]
    fn unknown_kind_round_trips_as_unknown() {
        let anns = [Annotation {
            original_text: "o".into(),
            ..Annotation::default()
        }];
        let json = to_shareable(&anns, TupleLayout::Current).stringify();
        assert_eq!(json, r#"[["X","o","",null,null]]"#);
        let value: Value = serde_json::from_str(&json).unwrap();
        let back = from_shareable(value.as_array().unwrap(), None, None).unwrap();
        assert_eq!(back[0].kind, None);
        assert_eq!(back[0].original_text, "o");
    }

    #[test]
    fn non_array_items_are_rejected() {
        let a = [Value::String("C".into())];
        assert!(matches!(
            from_shareable(&a, None, None),
            Err(CodecError::NotAPayload(_))
        ));
    }
}

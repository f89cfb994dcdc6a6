//! Reading annotations from a JSON file, in any of the shapes a tool may have
//! at hand:
//!
//! - an array of upstream `Annotation` objects (`{"type":"COMMENT",
//!   "originalText":…, "text":…, …}`);
//! - `{"annotations": [objects…], "globalAttachments": [{"path","name"}…]}`;
//! - an array of compact tuples (`[["C","text","comment",null,null], …]`);
//! - a payload-like object `{"a": [tuples…], "g": […], "d": […], "s": […]}`.

use serde_json::Value;
use share_codec::{Annotation, ImageAttachment};

use crate::error::CliError;

/// Annotations and global attachments read from a file.
#[derive(Debug, Default)]
pub struct Review {
    /// The annotations, in file order.
    pub annotations: Vec<Annotation>,
    /// Attachments on the whole plan.
    pub global_attachments: Vec<ImageAttachment>,
}

/// Parses `text` (see the module docs for the accepted shapes).
pub fn parse(text: &str) -> Result<Review, CliError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| CliError::Input(format!("annotations are not valid JSON: {e}")))?;
    let invalid = |what: String| CliError::Input(format!("invalid annotations: {what}"));
    match &value {
        Value::Array(items) if items.first().is_some_and(Value::is_array) => Ok(Review {
            annotations: share_codec::from_shareable(items, None, None)
                .map_err(|e| invalid(e.to_string()))?,
            global_attachments: Vec::new(),
        }),
        Value::Array(_) => Ok(Review {
            annotations: objects(&value).map_err(invalid)?,
            global_attachments: Vec::new(),
        }),
        Value::Object(object) if object.contains_key("a") => {
            let payload = share_codec::SharePayload::from_value(&value)
                .map_err(|e| invalid(e.to_string()))?;
            Ok(Review {
                annotations: payload.annotations,
                global_attachments: payload.global_attachments,
            })
        }
        Value::Object(object) if object.contains_key("annotations") => Ok(Review {
            annotations: objects(&object["annotations"]).map_err(invalid)?,
            global_attachments: match object.get("globalAttachments") {
                None | Some(Value::Null) => Vec::new(),
                // Objects `{"path","name"}` as the editor keeps them, else the
                // wire forms (`[path, name]` or plain paths).
                Some(images) => serde_json::from_value(images.clone())
                    .unwrap_or_else(|_| share_codec::parse_shareable_images(images)),
            },
        }),
        _ => Err(invalid(
            "expected an array of annotations, {\"annotations\": […]} or {\"a\": […]}".to_owned(),
        )),
    }
}

fn objects(value: &Value) -> Result<Vec<Annotation>, String> {
    serde_json::from_value(value.clone())
        .map_err(|e| format!("not upstream annotation objects: {e}"))
}

#[cfg(test)]
mod tests {
    use share_codec::AnnotationType;

    use super::*;

    #[test]
    fn every_shape_reads_to_the_same_annotations() {
        let shapes = [
            r#"[{"type":"COMMENT","originalText":"Body","text":"why","author":"me"}]"#,
            r#"{"annotations":[{"type":"COMMENT","originalText":"Body","text":"why","author":"me"}],"globalAttachments":[{"path":"/tmp/g.png","name":"g"}]}"#,
            r#"[["C","Body","why","me",null]]"#,
            r#"{"a":[["C","Body","why","me",null]],"g":[["/tmp/g.png","g"]]}"#,
        ];
        for shape in shapes {
            let review = parse(shape).unwrap();
            assert_eq!(review.annotations.len(), 1, "{shape}");
            let a = &review.annotations[0];
            assert_eq!(a.kind, Some(AnnotationType::Comment));
            assert_eq!(
                (
                    a.original_text.as_str(),
                    a.text.as_deref(),
                    a.author.as_deref()
                ),
                ("Body", Some("why"), Some("me"))
            );
        }
        assert_eq!(parse(shapes[1]).unwrap().global_attachments[0].name, "g");
        assert_eq!(
            parse(shapes[3]).unwrap().global_attachments[0].path,
            "/tmp/g.png"
        );
        assert!(parse("[]").unwrap().annotations.is_empty());
    }

    #[test]
    fn other_json_is_a_clear_error() {
        for bad in [
            "{",
            "42",
            r#"{"x":1}"#,
            r#"[{"type":"NOPE"}]"#,
            r#"[["C"], 5]"#,
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains("annotations"), "{bad}: {err}");
        }
    }
}

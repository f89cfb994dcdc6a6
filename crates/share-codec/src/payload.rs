//! The share payload: what a hash link or a paste carries once inflated
//! (`docs/wire-format.md`, "Payload"). [`SharePayload`] is the model; [`SharePayload::to_json`]
//! writes the wire object `{p, a, g, d, s, h, r}` byte for byte as upstream's
//! `generateShareUrl` / `createShortShareUrl` do, and
//! [`SharePayload::from_json`] reads any generation of it.

use serde_json::Value;

use crate::annotation::{Annotation, ImageAttachment};
use crate::error::CodecError;
use crate::json::Json;
use crate::tuple::{
    TupleLayout, from_shareable, parse_shareable_images, to_shareable, to_shareable_images,
};

/// A plan (or raw HTML document) with its annotations, as shared.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SharePayload {
    /// Plan markdown (`p`); `""` for raw-HTML shares.
    pub plan: String,
    /// Annotations (`a`, with `d` / `s` for `diffContext` / `source`).
    pub annotations: Vec<Annotation>,
    /// Attachments on the whole plan (`g`).
    pub global_attachments: Vec<ImageAttachment>,
    /// Raw HTML document (`h`); short links only, never in hash links.
    pub html: Option<String>,
    /// `r: "html"`: render `html` instead of the markdown.
    pub render_html: bool,
}

impl SharePayload {
    /// A markdown share without annotations: `{"p":plan,"a":[]}` (what the
    /// CLI/hook's remote share sends).
    pub fn markdown(plan: impl Into<String>) -> Self {
        SharePayload {
            plan: plan.into(),
            ..SharePayload::default()
        }
    }

    /// A raw-HTML share: `{"p":"","a":[],"h":html,"r":"html"}`.
    pub fn raw_html(html: impl Into<String>) -> Self {
        SharePayload {
            html: Some(html.into()),
            render_html: true,
            ..SharePayload::default()
        }
    }

    /// Whether a viewer shows the HTML document (upstream: `h && r === "html"`).
    pub fn is_html(&self) -> bool {
        self.render_html && self.html.as_deref().is_some_and(|h| !h.is_empty())
    }

    /// The wire object `{p, a, g, d, s, h, r}` in upstream's key order.
    ///
    /// With [`TupleLayout::Current`]: `g` only when there are global
    /// attachments; `d` / `s` only when at least one annotation has a
    /// non-empty `diffContext` / `source` (parallel to `a`, `null` elsewhere);
    /// `h` when `html` is set; `r: "html"` when `render_html`. Older layouts
    /// write only the keys their encoder knew (see [`TupleLayout`]).
    pub fn to_wire(&self, layout: TupleLayout) -> Json<'_> {
        let mut fields = vec![
            ("p", Json::Str(&self.plan)),
            ("a", to_shareable(&self.annotations, layout)),
        ];
        if layout != TupleLayout::Original && !self.global_attachments.is_empty() {
            fields.push(("g", to_shareable_images(&self.global_attachments, layout)));
        }
        if layout == TupleLayout::Current {
            if let Some(d) = parallel_array(&self.annotations, |a| a.diff_context.as_deref()) {
                fields.push(("d", d));
            }
            if let Some(s) = parallel_array(&self.annotations, |a| a.source.as_deref()) {
                fields.push(("s", s));
            }
            if let Some(html) = &self.html {
                fields.push(("h", Json::Str(html)));
            }
            if self.render_html {
                fields.push(("r", Json::Str("html")));
            }
        }
        Json::Object(fields)
    }

    /// `JSON.stringify` of the newest wire object (the text that gets compressed).
    pub fn to_json(&self) -> String {
        self.to_wire(TupleLayout::Current).stringify()
    }

    /// `JSON.stringify` of the wire object as an older encoder wrote it.
    pub fn to_json_with(&self, layout: TupleLayout) -> String {
        self.to_wire(layout).stringify()
    }

    /// Parses payload JSON (upstream's `JSON.parse` then `fromShareable`).
    ///
    /// # Errors
    /// [`CodecError::InvalidJson`] for text that is not JSON, else as
    /// [`SharePayload::from_value`].
    pub fn from_json(json: &str) -> Result<Self, CodecError> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| CodecError::InvalidJson(e.to_string()))?;
        Self::from_value(&value)
    }

    /// Restores a payload from parsed JSON. Unknown keys are ignored; `p`
    /// may be missing (read as `""`); `g`, `d`, `s` are read only when they
    /// are arrays; `h` only when it is a string; `render_html` is
    /// `r === "html"`. Annotations are restored as [`from_shareable`] does.
    ///
    /// # Errors
    /// [`CodecError::NotAPayload`] when the value is not an object, has no
    /// `a` array, has a non-string `p`, or an item of `a` is not an array.
    pub fn from_value(value: &Value) -> Result<Self, CodecError> {
        let Value::Object(object) = value else {
            return Err(CodecError::NotAPayload("expected a json object".into()));
        };
        let plan = match object.get("p") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(p)) => p.clone(),
            Some(_) => return Err(CodecError::NotAPayload("\"p\" is not a string".into())),
        };
        let a = match object.get("a") {
            Some(Value::Array(a)) => a,
            Some(_) => return Err(CodecError::NotAPayload("\"a\" is not an array".into())),
            None => return Err(CodecError::NotAPayload("no \"a\" annotations array".into())),
        };
        let array = |key: &str| object.get(key).and_then(Value::as_array).map(Vec::as_slice);
        let annotations = from_shareable(a, array("d"), array("s"))?;
        Ok(SharePayload {
            plan,
            annotations,
            global_attachments: object
                .get("g")
                .map(parse_shareable_images)
                .unwrap_or_default(),
            html: object.get("h").and_then(Value::as_str).map(str::to_owned),
            render_html: object.get("r").and_then(Value::as_str) == Some("html"),
        })
    }

    /// The plan title Import Review shows: the first line of the trimmed plan
    /// that starts with `#`, without its leading `#`s and spaces; for an HTML
    /// share (empty plan) the document's `<title>`; else `"Unknown Plan"`.
    pub fn title(&self) -> String {
        let found = if !self.plan.is_empty() {
            trim_js(&self.plan)
                .split('\n')
                .find(|line| line.starts_with('#'))
                .map(|line| trim_js(line.trim_start_matches('#')).to_owned())
        } else {
            self.html
                .as_deref()
                .and_then(html_title)
                .map(|t| trim_js(t).to_owned())
        };
        found.unwrap_or_else(|| "Unknown Plan".to_owned())
    }
}

/// `Some([v|null, …])` when at least one annotation has a non-empty value.
fn parallel_array<'a>(
    annotations: &'a [Annotation],
    field: impl Fn(&'a Annotation) -> Option<&'a str>,
) -> Option<Json<'a>> {
    let values: Vec<Option<&str>> = annotations
        .iter()
        .map(|a| field(a).filter(|v| !v.is_empty()))
        .collect();
    values
        .iter()
        .any(Option::is_some)
        .then(|| Json::Array(values.into_iter().map(Json::str_or_null).collect()))
}

/// ECMAScript `String.prototype.trim` (its whitespace set differs from Rust's
/// in U+FEFF and U+0085).
fn trim_js(s: &str) -> &str {
    s.trim_matches(|c: char| c == '\u{feff}' || (c != '\u{85}' && c.is_whitespace()))
}

/// The capture of `/<title[^>]*>([^<]+)<\/title>/i`.
fn html_title(html: &str) -> Option<&str> {
    let lower = html.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find("<title") {
        let start = from + pos;
        from = start + 1;
        let Some(gt) = lower[start..].find('>') else {
            break;
        };
        let content_start = start + gt + 1;
        let content_len = lower[content_start..]
            .find('<')
            .unwrap_or(lower.len() - content_start);
        let content_end = content_start + content_len;
        if content_len > 0 && lower[content_end..].starts_with("</title>") {
            return Some(&html[content_start..content_end]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_follow_import_review() {
        assert_eq!(
            SharePayload::markdown("\n  ## Auth plan  \nbody").title(),
            "Auth plan"
        );
        assert_eq!(SharePayload::markdown("no heading").title(), "Unknown Plan");
        let html = SharePayload::raw_html("<html><TITLE lang=en> Doc </Title></html>");
        assert_eq!(html.title(), "Doc");
        assert_eq!(
            SharePayload::raw_html("<title></title>").title(),
            "Unknown Plan"
        );
    }

    #[test]
    fn constructors_write_upstream_shapes() {
        assert_eq!(
            SharePayload::markdown("# P").to_json(),
            r##"{"p":"# P","a":[]}"##
        );
        assert_eq!(
            SharePayload::raw_html("<b>x</b>").to_json(),
            r#"{"p":"","a":[],"h":"<b>x</b>","r":"html"}"#
        );
    }

    #[test]
    fn non_payload_json_is_rejected() {
        for json in [
            r#""just a string""#,
            "[]",
            r#"{"p":"x"}"#,
            r#"{"a":{}}"#,
            r#"{"p":1,"a":[]}"#,
        ] {
            assert!(
                matches!(
                    SharePayload::from_json(json),
                    Err(CodecError::NotAPayload(_))
                ),
                "{json}"
            );
        }
        assert!(matches!(
            SharePayload::from_json("this is not json"),
            Err(CodecError::InvalidJson(_))
        ));
    }
}

//! Writing JSON exactly as ECMAScript `JSON.stringify` does, so
//! that a payload built here is byte-identical to upstream's: compact, keys in
//! insertion order, and only the escapes `JSON.stringify` uses.
//!
//! Reading JSON is left to `serde_json` (see [`crate::payload`]).

/// A JSON value in the shape the share format needs: objects keep their
/// insertion order and strings borrow from the payload being written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Json<'a> {
    /// `null` (also what `JSON.stringify` writes for `undefined` array items).
    Null,
    /// An integer (the quick-label flag `1`).
    Int(i64),
    /// A string, escaped on output.
    Str(&'a str),
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object; keys are written in this order.
    Object(Vec<(&'a str, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// `Str(s)` for `Some(s)`, `Null` for `None`.
    pub fn str_or_null(value: Option<&'a str>) -> Self {
        value.map_or(Json::Null, Json::Str)
    }

    /// Serialises the value as `JSON.stringify(value)` would.
    pub fn stringify(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// Appends the `JSON.stringify` form of the value to `out`.
    pub fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Int(n) => out.push_str(&n.to_string()),
            Json::Str(s) => write_string(out, s),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(fields) => {
                out.push('{');
                for (i, (key, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(out, key);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Appends `s` as a JSON string literal with `JSON.stringify`'s escaping:
/// `\" \\ \b \f \n \r \t`, other C0 controls as lowercase `\u00xx`; `/`,
/// DEL, U+2028/U+2029 and all other non-ASCII characters are written raw.
pub fn write_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut run_start = 0;
    for (i, byte) in s.bytes().enumerate() {
        let escape: &str = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[run_start..i]);
        if escape.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        } else {
            out.push_str(escape);
        }
        run_start = i + 1;
    }
    out.push_str(&s[run_start..]);
    out.push('"');
}

const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(s: &str) -> String {
        Json::Str(s).stringify()
    }

    #[test]
    fn escapes_match_json_stringify() {
        assert_eq!(quoted("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quoted("\u{8}\u{c}\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(
            quoted("\u{0}\u{1}\u{1f}\u{b}"),
            r#""\u0000\u0001\u001f\u000b""#
        );
        assert_eq!(
            quoted("/\u{7f}é\u{2028}\u{2029}👍"),
            "\"/\u{7f}é\u{2028}\u{2029}👍\""
        );
    }

    #[test]
    fn objects_keep_insertion_order_and_are_compact() {
        let v = Json::Object(vec![
            ("p", Json::Str("x")),
            ("a", Json::Array(vec![Json::Null, Json::Int(1)])),
            ("b", Json::Object(vec![])),
        ]);
        assert_eq!(v.stringify(), r#"{"p":"x","a":[null,1],"b":{}}"#);
    }
}

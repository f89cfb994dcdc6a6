//! Text from a link or a review, made safe to print: the plan, every comment
//! and every name come from whoever made the link or wrote in the review.
//! Escape sequences in them would drive the reader's terminal (cursor
//! moves, OSC 52 clipboard writes, title changes, OSC 8 hyperlinks that
//! lie); invisible formatting characters would make the text read as
//! something other than what it is (bidi overrides that reorder it, as in
//! "Trojan Source"; zero-width characters and tags that hide words from the
//! reader but not from a coding agent).
//!
//! Text output drops these characters ([`safe_text`]); JSON output keeps
//! the text exact and writes them as `\uXXXX` escapes ([`json_line`],
//! [`json_pretty`]), so the JSON is as safe to print as the text.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Serialize;

use crate::error::CliError;

pub use api_types::rules::is_invisible_format;

/// Whether [`safe_text`] drops `c`: a control character other than newline
/// and tab, or an invisible formatting character.
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_invisible_format(c)
}

/// `text` without C0 and C1 control characters other than newline and tab
/// (so without ESC, BEL, CR, DEL and the 8-bit CSI/OSC introducers), and
/// without invisible formatting characters ([`is_invisible_format`]). What
/// an escape sequence leaves behind is plain, visible text, in the order it
/// is stored. JSON output does not need this: it escapes these characters
/// and stays exact.
pub fn safe_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|&c| !unsafe_char(c)).collect())
}

/// `value` as one line of JSON and a newline, every control and invisible
/// formatting character in its strings escaped (see [`escape_hidden`]).
/// Every JSON the CLI prints goes through here or [`json_pretty`].
pub fn json_line(value: &impl Serialize) -> Result<String, CliError> {
    serde_json::to_string(value)
        .map(|json| escape_hidden(json) + "\n")
        .map_err(|e| CliError::Output(e.to_string()))
}

/// [`json_line`], indented over several lines.
pub fn json_pretty(value: &impl Serialize) -> Result<String, CliError> {
    serde_json::to_string_pretty(value)
        .map(|json| escape_hidden(json) + "\n")
        .map_err(|e| CliError::Output(e.to_string()))
}

/// Whether JSON output escapes `c` beyond what serde_json does (it escapes
/// only U+0000–U+001F): DEL, the C1 controls (U+0080–U+009F, among them the
/// 8-bit CSI and OSC) and the invisible formatting characters.
fn escaped_in_json(c: char) -> bool {
    c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) || is_invisible_format(c)
}

/// `json` (serde_json's output) with each [`escaped_in_json`] character
/// written as `\uXXXX` (a surrogate pair past U+FFFF). Outside its strings,
/// JSON holds only ASCII punctuation, digits, the letters of `true`,
/// `false` and `null`, and white space, none of them such a character: each
/// one found is inside a string, not within an escape (escapes are ASCII),
/// where `\uXXXX` stands for the character itself. So the document stays
/// valid and decodes to exactly the same value.
fn escape_hidden(json: String) -> String {
    if !json.chars().any(escaped_in_json) {
        return json;
    }
    let mut escaped = String::with_capacity(json.len() + 32);
    for c in json.chars() {
        if escaped_in_json(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                // Writing to a `String` cannot fail.
                let _ = write!(escaped, "\\u{unit:04x}");
            }
        } else {
            escaped.push(c);
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_go_and_everything_else_stays() {
        let hostile = "a\u{1b}[2J\u{1b}]52;c;ZXZpbA==\u{7}b\u{9b}31m\u{1b}]8;;https://evil.test\u{1b}\\x\r\u{7f}\u{0}";
        let cleaned = safe_text(hostile);
        assert!(!cleaned.chars().any(|c| c.is_control()), "{cleaned:?}");
        assert_eq!(cleaned, "a[2J]52;c;ZXZpbA==b31m]8;;https://evil.test\\x");
        let fine = "# Plan\n\n- [ ] tab\there, “quotes”, 🚀, ü, שלום, مرحبا, soft\u{ad}hyphen\n";
        assert!(matches!(safe_text(fine), Cow::Borrowed(_)));
        assert_eq!(safe_text(fine), fine);
    }

    #[test]
    fn bidi_controls_and_zero_width_characters_go() {
        // "Trojan Source": an override that shows `admin` checks reversed,
        // a zero-width space inside a word, an isolate, a BOM, a tag.
        let hostile = "if \u{202E}nimda\u{202C} ok\u{200B}ay \u{2066}x\u{2069} \u{FEFF}\u{61C}\u{200F}\u{2060}\u{E0041}end";
        assert_eq!(safe_text(hostile), "if nimda okay x end");
        for c in [
            '\u{061C}',
            '\u{180E}',
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{200E}',
            '\u{200F}',
            '\u{202A}',
            '\u{202B}',
            '\u{202C}',
            '\u{202D}',
            '\u{202E}',
            '\u{2060}',
            '\u{2061}',
            '\u{2062}',
            '\u{2063}',
            '\u{2064}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{206A}',
            '\u{206F}',
            '\u{FEFF}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{E0001}',
            '\u{E0020}',
            '\u{E007F}',
        ] {
            assert!(is_invisible_format(c), "{c:?}");
            assert_eq!(safe_text(&format!("a{c}b")), "ab", "{c:?}");
        }
        for c in ['\u{AD}', '\u{2070}', '\u{FEFC}', '\u{E0080}', ' ', 'ü'] {
            assert!(!is_invisible_format(c), "{c:?}");
        }
    }

    #[test]
    fn json_escapes_controls_and_invisible_characters_and_stays_exact() {
        let hidden = "a\u{1b}[2J\u{7}\u{7f}\u{9b}31m\u{202E}x\u{202C}\u{200B}\u{200D}\u{2066}\u{FEFF}\u{61C}\u{E0041}\n\tü🚀\"\\";
        let value = serde_json::json!({
            "name": hidden,
            "list": [hidden, 1, null, true],
            hidden: {"nested": hidden},
        });
        for json in [json_line(&value).unwrap(), json_pretty(&value).unwrap()] {
            assert!(json.ends_with('\n'));
            let raw: Vec<char> = json
                .trim_end()
                .chars()
                .filter(|&c| is_invisible_format(c) || (c.is_control() && c != '\n'))
                .collect();
            assert!(raw.is_empty(), "{raw:?} in {json}");
            for escape in [
                "\\u009b",
                "\\u007f",
                "\\u202e",
                "\\u200b",
                "\\udb40\\udc41",
                "\\u001b",
            ] {
                assert!(json.contains(escape), "{escape} not in {json}");
            }
            assert!(json.contains("ü🚀"), "{json}");
            let back: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(back, value);
        }
        // Nothing to escape: serde_json's text as it is.
        let plain = serde_json::json!({"plan": "# Plan\n\n- ü 🚀 \"q\""});
        assert_eq!(json_line(&plain).unwrap(), format!("{plain}\n"));
    }
}

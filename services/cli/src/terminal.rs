//! Text from a link or a review, made safe to print: the plan, every comment
//! and every name come from whoever made the link or wrote in the review.
//! Escape sequences in them would drive the reader's terminal (cursor
//! moves, OSC 52 clipboard writes, title changes, OSC 8 hyperlinks that
//! lie); invisible formatting characters would make the text read as
//! something other than what it is (bidi overrides that reorder it, as in
//! "Trojan Source"; zero-width characters and tags that hide words from the
//! reader but not from a coding agent).

use std::borrow::Cow;

/// Whether `c` is an invisible formatting character that changes how the
/// text around it reads: the bidi marks, embeddings, overrides and isolates,
/// zero-width spaces and joiners, invisible operators, the byte order mark,
/// interlinear annotation marks and tag characters (all of general category
/// `Cf`). The one list of them: [`safe_text`] drops them, and the client's
/// error messages escape them.
///
/// Not every `Cf` character is here: the soft hyphen and the Arabic and
/// other number signs are visible or harmless, and text needs them.
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' // ARABIC LETTER MARK
            | '\u{180E}' // MONGOLIAN VOWEL SEPARATOR
            | '\u{200B}'..='\u{200F}' // zero-width space, non-joiner, joiner; LRM, RLM
            | '\u{202A}'..='\u{202E}' // LRE, RLE, PDF, LRO, RLO
            | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
            | '\u{2066}'..='\u{206F}' // LRI, RLI, FSI, PDI; deprecated format controls
            | '\u{FEFF}' // zero-width no-break space (byte order mark)
            | '\u{FFF9}'..='\u{FFFB}' // interlinear annotation
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}' // tags
    )
}

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
}

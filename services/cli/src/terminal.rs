//! Text from a link, made safe to print: the plan and every comment come
//! from whoever made the link, and escape sequences in them would drive the
//! reader's terminal (cursor moves, OSC 52 clipboard writes, title changes,
//! OSC 8 hyperlinks that lie).

use std::borrow::Cow;

/// `text` without C0 and C1 control characters other than newline and tab
/// (so without ESC, BEL, CR, DEL and the 8-bit CSI/OSC introducers). What
/// an escape sequence leaves behind is plain, visible text. JSON output
/// does not need this: it escapes control characters and stays exact.
pub fn safe_text(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
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
        let fine = "# Plan\n\n- [ ] tab\there, “quotes”, 🚀, ü\n";
        assert!(matches!(safe_text(fine), Cow::Borrowed(_)));
        assert_eq!(safe_text(fine), fine);
    }
}

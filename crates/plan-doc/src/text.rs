//! JavaScript string semantics the upstream code relies on: what `\s` and
//! `String.prototype.trim` treat as whitespace, and UTF-16 lengths.

/// Whether `c` is whitespace to JavaScript (`\s`, `trim`): the ECMAScript
/// WhiteSpace and LineTerminator sets. Unlike [`char::is_whitespace`] this
/// includes U+FEFF (a byte-order mark) and excludes U+0085.
pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `s.trim()` in JavaScript.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// `s.trimStart()` in JavaScript.
pub(crate) fn js_trim_start(s: &str) -> &str {
    s.trim_start_matches(is_js_space)
}

/// Number of leading JavaScript-whitespace characters.
pub(crate) fn leading_space_chars(s: &str) -> usize {
    s.chars().take_while(|&c| is_js_space(c)).count()
}

/// Length in UTF-16 code units (JavaScript's `length`).
pub(crate) fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// `s.trim().replace(/\s+/g, ' ')`: runs of whitespace become one space.
pub(crate) fn collapse_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_space = false;
    for c in js_trim(s).chars() {
        if is_js_space(c) {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_whitespace_includes_bom_but_not_next_line() {
        assert_eq!(js_trim("\u{feff} a \u{a0}"), "a");
        assert_eq!(js_trim("\u{85}a"), "\u{85}a");
        assert_eq!(collapse_spaces("  a \n\t b  "), "a b");
        assert_eq!(utf16_len("a😀"), 3);
        assert_eq!(leading_space_chars("\t  x "), 3);
    }
}

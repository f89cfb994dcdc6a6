// JavaScript string semantics the ported plan-doc modules share: what counts
// as a space or a word character, whitespace runs collapsed, how many times a
// text holds a substring, and how many code units a character takes. The
// Rust side keeps its equivalents (JavaScript's idea of whitespace, UTF-16
// lengths) in `crates/plan-doc/src/text.rs`. Pure: no DOM, no imports.

export const isSpace = (c) => c !== undefined && c !== "" && /\s/.test(c);
export const isWord = (c) => c !== undefined && c !== "" && /\w/.test(c);
/** `s.trim()` with whitespace runs as one space. */
export const collapseSpaces = (s) => s.trim().replace(/\s+/g, " ");
export const count = (s, c) => s.split(c).length - 1;
/** Length of the character starting at `i` (2 for a surrogate pair). */
export const charLen = (s, i) => (/[\ud800-\udbff]/.test(s[i] ?? "") && /[\udc00-\udfff]/.test(s[i + 1] ?? "") ? 2 : 1);

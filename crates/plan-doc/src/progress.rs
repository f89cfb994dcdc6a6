//! Progress pushes: a revision of a plan that only ticks (or unticks)
//! checklist items — `- [ ]` ↔ `- [x]` — and changes nothing else. A review
//! keeps its approval through such a push (the server cannot read plans,
//! so the clients check the claim: the CLI refuses to send a progress push
//! that changes more, the portal flags one).
//!
//! Line by line: the two plans must have the same lines, where a pair of
//! lines may differ only in the mark of a task-list item (a list item,
//! `-`, `*`, `+` or `1.` / `1)`, whose text starts with `[ ]`, `[x]` or
//! `[X]` followed by a space, a tab or the end of the line). Line endings
//! (`\n`, `\r\n`) are compared as they are.

/// Whether `new` differs from `old` only in checklist marks (identical
/// plans included).
pub fn only_checklist_marks_differ(old: &str, new: &str) -> bool {
    let (mut a, mut b) = (old.split('\n'), new.split('\n'));
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if x == y => {}
            (Some(x), Some(y)) => match (mark_at(x), mark_at(y)) {
                (Some(i), Some(j)) if i == j && x[..i] == y[..j] && x[i + 1..] == y[j + 1..] => {}
                _ => return false,
            },
            _ => return false,
        }
    }
}

/// The byte offset of the mark (the character between the brackets) of a
/// task-list item line, if `line` is one.
fn mark_at(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut i = 0;
    // Up to three spaces of indent per CommonMark, but nested items go
    // deeper: any run of spaces and tabs.
    while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
        i += 1;
    }
    match bytes.get(i)? {
        b'-' | b'*' | b'+' => i += 1,
        b'0'..=b'9' => {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i - start > 9 || !matches!(bytes.get(i), Some(b'.' | b')')) {
                return None;
            }
            i += 1;
        }
        _ => return None,
    }
    // At least one space or tab after the marker.
    let after_marker = i;
    while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
        i += 1;
    }
    if i == after_marker {
        return None;
    }
    if bytes.get(i) != Some(&b'[') || bytes.get(i + 2) != Some(&b']') {
        return None;
    }
    if !matches!(bytes.get(i + 1), Some(b' ' | b'x' | b'X')) {
        return None;
    }
    match bytes.get(i + 3) {
        None | Some(b' ' | b'\t' | b'\r') => Some(i + 1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticking_boxes_is_progress() {
        let old = "# Plan\n\n- [ ] one\n- [x] two\n  * [ ] nested\n1. [ ] numbered\n";
        let new = "# Plan\n\n- [x] one\n- [ ] two\n  * [X] nested\n1. [x] numbered\n";
        assert!(only_checklist_marks_differ(old, new));
        assert!(only_checklist_marks_differ(old, old));
        assert!(
            only_checklist_marks_differ("- [ ]", "- [x]"),
            "an empty item"
        );
        assert!(only_checklist_marks_differ("- [ ] a\r\n", "- [x] a\r\n"));
    }

    #[test]
    fn anything_else_is_not() {
        let old = "- [ ] one\n- [ ] two\n";
        for new in [
            "- [x] one\n- [ ] two\n- [ ] three\n",
            "- [x] one!\n- [ ] two\n",
            "- [x] one\n",
            "* [x] one\n- [ ] two\n",
            "- [x]one\n- [ ] two\n",
            "-  [x] one\n- [ ] two\n",
            "- [y] one\n- [ ] two\n",
            "- [ ] one\n- [ ] two",
        ] {
            assert!(!only_checklist_marks_differ(old, new), "{new:?}");
        }
        assert!(
            !only_checklist_marks_differ("[ ] a", "[x] a"),
            "not a list item"
        );
        assert!(!only_checklist_marks_differ(
            "Use a [ ] here",
            "Use a [x] here"
        ));
        assert!(!only_checklist_marks_differ(
            "1234567890. [ ] a",
            "1234567890. [x] a"
        ));
    }
}

//! Step progress of checklist plans: the plan's steps, which are done, and
//! which one is current. The portal shows it as an `n/m` meter with the
//! current step (`crates/portal/web/plandoc-steps.js` is a port, held to
//! this module by the differential test `tests/js_ports.rs`); `planshare
//! open --format json` reports it as `"steps"`.
//!
//! The rules, line by line (lines split at `\n`, one trailing `\r` dropped,
//! numbered from 1 counting every line of the markdown, frontmatter
//! included):
//!
//! - **Fences.** A line that starts, after JavaScript whitespace, with three
//!   or more backticks or tildes opens a fenced block; it closes at the next
//!   line that starts, after whitespace, with at least as many of the same
//!   character (or at the end of the plan). These are the block parser's
//!   conditions for backtick fences, extended to `~~~`; the fence lines and
//!   every line between them are neither steps nor headings. (Raw HTML
//!   blocks, directives and display math are not tracked: a fence or a task
//!   item inside one counts as if it stood alone.)
//! - **Indentation** is the run of spaces and tabs that starts a line, a
//!   space counting one column and a tab four.
//! - **Task items.** After the indentation, a list marker (`-`, `*`, `+`, or
//!   1 to 9 digits and `.` or `)`), one or more spaces or tabs, then a box:
//!   `[ ]` (pending), `[-]` or `[~]` (in progress), `[x]` or `[X]` (done),
//!   followed by a space or the end of the line. The step's text is the rest
//!   of that line, trimmed (JavaScript's `trim`); continuation lines are not
//!   part of it.
//! - **Headings.** After the indentation, 1 to 6 `#` followed by a space, a
//!   tab or the end of the line; the level is the number of `#`, the text
//!   the rest of the line without a closing run of `#` (one preceded by a
//!   space or tab, or standing alone), trimmed.
//! - **The steps section.** A heading whose text is `steps` in any ASCII
//!   case opens a steps section, which runs to the next heading of the same
//!   or a lower level number (`##` ends at `#` or `##`), or the end of the
//!   plan. The first steps section, in document order, that holds any task
//!   item gives the steps: its task items at the smallest indentation among
//!   them (nested items, and items of nested sections deeper than that, are
//!   not steps). When no steps section holds a task item, the steps are all
//!   task items of the plan at the smallest indentation any has.
//! - A plan with no task item (outside fences) has no steps: `None`.
//! - **Current step**: the first step in progress, else the first pending
//!   one, else none (every step done).
//!
//! One pass over the lines and one over the headings of the steps sections
//! (each heading lies in at most six sections): linear in the plan's size.

use serde::{Deserialize, Serialize};

use crate::text::{js_trim, js_trim_start};

/// A step's state, from its box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepState {
    /// `[ ]`
    Pending,
    /// `[-]` or `[~]`
    InProgress,
    /// `[x]` or `[X]`
    Done,
}

/// One step: a task item of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The item's first line after its box, trimmed.
    pub text: String,
    /// Pending, in progress or done.
    pub state: StepState,
    /// 1-based line of the item in the markdown.
    pub line: usize,
}

/// A checklist plan's steps (JSON: `{"total", "done", "current", "items"}`,
/// `current` `null` when every step is done).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Steps {
    /// Number of steps (`items.len()`).
    pub total: usize,
    /// Number of steps done.
    pub done: usize,
    /// Index in `items` of the first step in progress, else of the first
    /// pending one; `None` when all are done.
    pub current: Option<usize>,
    /// The steps in document order.
    pub items: Vec<Step>,
}

/// The steps of a checklist plan, or `None` when the plan has no task item
/// (the rules are in the module documentation).
pub fn plan_steps(markdown: &str) -> Option<Steps> {
    let mut items: Vec<(usize, Step)> = Vec::new();
    // Steps headings: (level, items before it, index in `headings`).
    let mut steps_headings: Vec<(usize, usize, usize)> = Vec::new();
    // Every heading: (level, items before it).
    let mut headings: Vec<(usize, usize)> = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    for (i, raw) in markdown.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let start = js_trim_start(line).as_bytes();
        if let Some((ch, len)) = fence {
            if run_of(start, ch) >= len {
                fence = None;
            }
            continue;
        }
        if let Some(&ch @ (b'`' | b'~')) = start.first() {
            let len = run_of(start, ch);
            if len >= 3 {
                fence = Some((ch, len));
                continue;
            }
        }
        let (indent, rest) = indentation(line);
        if let Some((level, text)) = heading(rest) {
            if text.eq_ignore_ascii_case("steps") {
                steps_headings.push((level, items.len(), headings.len()));
            }
            headings.push((level, items.len()));
        } else if let Some((state, text)) = task_item(rest) {
            let step = Step {
                text: text.to_owned(),
                state,
                line: i + 1,
            };
            items.push((indent, step));
        }
    }
    if items.is_empty() {
        return None;
    }
    let section = steps_headings.iter().find_map(|&(level, first, at)| {
        let end = headings[at + 1..]
            .iter()
            .find(|&&(l, _)| l <= level)
            .map_or(items.len(), |&(_, before)| before);
        (end > first).then_some(first..end)
    });
    let chosen = &items[section.unwrap_or(0..items.len())];
    let shallowest = chosen.iter().map(|(indent, _)| *indent).min()?;
    let items: Vec<Step> = chosen
        .iter()
        .filter(|(indent, _)| *indent == shallowest)
        .map(|(_, step)| step.clone())
        .collect();
    let done = items.iter().filter(|s| s.state == StepState::Done).count();
    let first = |state| items.iter().position(|s: &Step| s.state == state);
    let current = first(StepState::InProgress).or_else(|| first(StepState::Pending));
    Some(Steps {
        total: items.len(),
        done,
        current,
        items,
    })
}

/// Length of the run of `ch` that starts `bytes`.
fn run_of(bytes: &[u8], ch: u8) -> usize {
    bytes.iter().take_while(|&&b| b == ch).count()
}

/// The line's indentation in columns (a tab counting four) and the rest.
fn indentation(line: &str) -> (usize, &str) {
    let mut columns = 0;
    for (at, b) in line.bytes().enumerate() {
        match b {
            b' ' => columns += 1,
            b'\t' => columns += 4,
            _ => return (columns, &line[at..]),
        }
    }
    (columns, "")
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// An ATX heading (after the indentation): its level and its text.
fn heading(rest: &str) -> Option<(usize, &str)> {
    let level = run_of(rest.as_bytes(), b'#');
    if !(1..=6).contains(&level) {
        return None;
    }
    let text = &rest[level..];
    if !text.is_empty() && !text.starts_with(is_blank_char) {
        return None;
    }
    let text = js_trim(text);
    // A closing run of `#`: alone, or after a space or tab.
    let without = text.trim_end_matches('#');
    let text =
        if without.len() < text.len() && (without.is_empty() || without.ends_with(is_blank_char)) {
            js_trim(without)
        } else {
            text
        };
    Some((level, text))
}

fn is_blank_char(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// A task item (after the indentation): its state and its text.
fn task_item(rest: &str) -> Option<(StepState, &str)> {
    let b = rest.as_bytes();
    let marker = match b.first()? {
        b'-' | b'*' | b'+' => 1,
        _ => {
            let digits = b.iter().take_while(|b| b.is_ascii_digit()).count();
            if !(1..=9).contains(&digits) || !matches!(b.get(digits), Some(b'.' | b')')) {
                return None;
            }
            digits + 1
        }
    };
    let gap = b[marker..].iter().take_while(|&&b| is_blank(b)).count();
    if gap == 0 {
        return None;
    }
    let body = &b[marker + gap..];
    if body.len() < 3 || body[0] != b'[' || body[2] != b']' {
        return None;
    }
    let state = match body[1] {
        b' ' => StepState::Pending,
        b'-' | b'~' => StepState::InProgress,
        b'x' | b'X' => StepState::Done,
        _ => return None,
    };
    if !matches!(body.get(3), None | Some(b' ')) {
        return None;
    }
    let text = &rest[marker + gap + 3..];
    Some((state, js_trim(text)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepState::*;

    /// (text, state, line) of a step.
    type Shape = (String, StepState, usize);

    /// The shape of each step, and the current index.
    fn shape(md: &str) -> Option<(Vec<Shape>, Option<usize>)> {
        plan_steps(md).map(|s| {
            assert_eq!(s.total, s.items.len());
            assert_eq!(s.done, s.items.iter().filter(|i| i.state == Done).count());
            let items = s
                .items
                .into_iter()
                .map(|i| (i.text, i.state, i.line))
                .collect();
            (items, s.current)
        })
    }

    fn st(text: &str, state: StepState, line: usize) -> Shape {
        (text.to_owned(), state, line)
    }

    #[test]
    fn a_plan_without_task_items_has_no_steps() {
        assert_eq!(plan_steps(""), None);
        assert_eq!(plan_steps("\n\n"), None);
        assert_eq!(
            plan_steps("# Plan\n\n- a list\n- [y] not a box\n1. [x]done\n"),
            None
        );
        assert_eq!(plan_steps("## Steps\n\n1. first\n2. second\n"), None);
    }

    #[test]
    fn every_box_and_marker_is_recognised() {
        let md = "- [ ] a\n* [x] b\n+ [X] c\n1. [-] d\n12) [~] e\n-\t[ ]\n- [ ]\r\n-  [x]   f  \n";
        assert_eq!(
            shape(md),
            Some((
                vec![
                    st("a", Pending, 1),
                    st("b", Done, 2),
                    st("c", Done, 3),
                    st("d", InProgress, 4),
                    st("e", InProgress, 5),
                    st("", Pending, 6),
                    st("", Pending, 7),
                    st("f", Done, 8),
                ],
                Some(3)
            ))
        );
        // Not task items: no space after the box or the marker, other boxes,
        // too many digits, other markers.
        assert_eq!(
            plan_steps(
                "- [x]done\n-[ ] a\n- [ ]\tb\n- [o] c\n1234567890. [ ] d\n> - [ ] e\na. [ ] f\n"
            ),
            None
        );
    }

    #[test]
    fn the_current_step_is_the_first_in_progress_else_the_first_pending() {
        assert_eq!(shape("- [x] a\n- [ ] b\n- [~] c\n").unwrap().1, Some(2));
        assert_eq!(shape("- [x] a\n- [ ] b\n- [ ] c\n").unwrap().1, Some(1));
        assert_eq!(shape("- [x] a\n- [X] b\n").unwrap().1, None);
        let all_done = plan_steps("- [x] a\n- [X] b\n").unwrap();
        assert_eq!((all_done.done, all_done.total), (2, 2));
    }

    #[test]
    fn a_steps_section_beats_the_shallowest_list() {
        let md = "# Plan\n\n- [x] context\n\n## Steps\n\n  - [ ] one\n  - [~] two\n    - [ ] two.a\n\n## Risks\n\n- [ ] risk\n";
        assert_eq!(
            shape(md),
            Some((
                vec![st("one", Pending, 7), st("two", InProgress, 8)],
                Some(1)
            ))
        );
    }

    #[test]
    fn a_section_runs_to_the_next_heading_of_its_level_or_higher() {
        // `### Detail` stays inside `## Steps`; `# Next` ends it.
        let md = "## Steps\n### Detail\n- [ ] a\n# Next\n- [ ] b\n";
        assert_eq!(shape(md).unwrap().0, [st("a", Pending, 3)]);
        // A deeper-level steps heading ends at a shallower one.
        let md = "#### steps ####\n- [x] a\n### Other\n- [ ] b\n";
        assert_eq!(shape(md).unwrap().0, [st("a", Done, 2)]);
        // Case and spacing of the heading do not matter; a closing run of
        // `#` is not part of the text; `#Steps` is not a heading.
        assert_eq!(shape("#   STEPS  #\n- [ ] a\n").unwrap().0.len(), 1);
        let md = "- [ ] outside\n#Steps\n  - [ ] inside\n";
        assert_eq!(shape(md).unwrap().0, [st("outside", Pending, 1)]);
        let md = "- [ ] outside\n## Steps#\n- [ ] inside\n";
        assert_eq!(shape(md).unwrap().0.len(), 2);
    }

    #[test]
    fn the_first_steps_section_with_task_items_gives_the_steps() {
        let md = "## Steps\n\nSee below.\n\n## Steps\n\n- [ ] real\n\n## Steps\n\n- [ ] later\n";
        assert_eq!(shape(md).unwrap().0, [st("real", Pending, 7)]);
        // A steps section without task items falls back to the whole plan.
        let md = "- [ ] a\n## Steps\n1. plain\n## More\n  - [x] b\n";
        assert_eq!(shape(md).unwrap().0, [st("a", Pending, 1)]);
    }

    #[test]
    fn without_a_section_the_shallowest_task_items_of_the_plan_are_the_steps() {
        // The nested item is deeper; the tab counts four columns, so
        // `\t- [ ] c` is as deep as four spaces, deeper than two.
        let md = "Intro\n\n  - [ ] a\n      - [x] a.1\n  - [x] b\n\t- [ ] c\n";
        assert_eq!(
            shape(md),
            Some((vec![st("a", Pending, 3), st("b", Done, 5)], Some(0)))
        );
        // Only nested items: the shallowest of them.
        assert_eq!(
            shape("- plain\n  - [ ] x\n").unwrap().0,
            [st("x", Pending, 2)]
        );
    }

    #[test]
    fn fenced_lines_are_never_steps_or_headings() {
        let md = "```md\n## Steps\n- [ ] fenced\n```\n~~~~\n- [ ] tilde\n~~~\n- [ ] still fenced\n~~~~\n- [x] real\n";
        assert_eq!(shape(md).unwrap().0, [st("real", Done, 10)]);
        // A backtick fence is not closed by tildes; an unclosed fence runs to
        // the end; indentation does not matter; a longer fence needs a
        // closing run at least as long.
        assert_eq!(plan_steps("```\n~~~\n- [ ] a\n"), None);
        assert_eq!(
            shape("  ````\n```\n- [ ] a\n   ````x\n- [ ] b\n")
                .unwrap()
                .0,
            [st("b", Pending, 5)]
        );
        // Two backticks are no fence.
        assert_eq!(shape("``\n- [ ] a\n").unwrap().0.len(), 1);
        // A fence inside the steps section hides its items only.
        let md = "## Steps\n```\n- [ ] no\n```\n- [ ] yes\n";
        assert_eq!(shape(md).unwrap().0, [st("yes", Pending, 5)]);
    }

    #[test]
    fn crlf_line_endings_are_line_breaks() {
        let md = "# Plan\r\n\r\n## Steps\r\n\r\n- [x] one\r\n- [ ]\r\n  - [ ] nested\r\n```\r\n- [ ] code\r\n```\r\n- [-] two \r\n";
        assert_eq!(
            shape(md),
            Some((
                vec![
                    st("one", Done, 5),
                    st("", Pending, 6),
                    st("two", InProgress, 11)
                ],
                Some(2)
            ))
        );
    }

    #[test]
    fn the_json_shape_is_total_done_current_items() {
        let json = serde_json::to_string(&plan_steps("- [x] a\n- [ ] b\n")).unwrap();
        assert_eq!(
            json,
            r#"{"total":2,"done":1,"current":1,"items":[{"text":"a","state":"done","line":1},{"text":"b","state":"pending","line":2}]}"#
        );
        let json = serde_json::to_value(plan_steps("- [x] a\n- [~] b\n- [-] c")).unwrap();
        assert_eq!(json["items"][1]["state"], "in-progress");
        let done = serde_json::to_value(plan_steps("- [x] a")).unwrap();
        assert!(done["current"].is_null());
        assert!(
            serde_json::to_value(plan_steps("no steps"))
                .unwrap()
                .is_null()
        );
    }

    #[test]
    fn text_is_trimmed_as_javascript_trims() {
        // U+FEFF and U+00A0 are JavaScript whitespace; U+0085 is not.
        let steps = plan_steps("- [ ] \u{a0}a\u{feff}\n- [ ] \u{85}b\n").unwrap();
        assert_eq!(steps.items[0].text, "a");
        assert_eq!(steps.items[1].text, "\u{85}b");
    }

    #[test]
    fn a_large_plan_is_linear() {
        // Many steps headings without items (each section is looked at),
        // many items, and an unclosed fence.
        let mut md = "# Steps\n## Steps\n### x\n".repeat(60_000);
        md.push_str(&"- [ ] item\n  - [x] sub\n".repeat(100_000));
        md.push_str("```\n");
        md.push_str(&"- [ ] fenced\n".repeat(200_000));
        assert!(md.len() > 5_000_000, "{}", md.len());
        let started = std::time::Instant::now();
        let steps = plan_steps(&md).unwrap();
        assert_eq!((steps.total, steps.items[0].line), (100_000, 180_001));
        let flat = "- [ ] a step of the plan\n".repeat(200_000);
        assert_eq!(plan_steps(&flat).unwrap().total, 200_000);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}

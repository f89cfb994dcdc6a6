// What the page calls things. The payload names annotation kinds as enum
// values (`GLOBAL_COMMENT`) and reviews' states as identifiers
// (`changes_requested`); a person reads them as words. Every label the
// page shows for a kind or a state comes from here, so the share page, the
// review pages and their tests agree. Pure: no DOM.

const KINDS = {
  COMMENT: "Comment",
  DELETION: "Deletion",
  GLOBAL_COMMENT: "Comment on the plan",
  REPLACEMENT: "Replacement",
  INSERTION: "Insertion",
};

/** The kind of `annotation` in words: "Comment", "Deletion", "Comment on
 * the plan", "Label" (a quick-label comment), "Replacement", "Insertion",
 * or "Annotation" for a kind this page does not know. */
export function kindLabel(annotation) {
  if (annotation.type === "COMMENT" && annotation.isQuickLabel) return "Label";
  return KINDS[annotation.type] ?? "Annotation";
}

/** The heading of a listed annotation: its kind, then its author when it
 * has one ("Deletion — Ann"). */
export function annotationHeading(annotation) {
  const kind = kindLabel(annotation);
  return annotation.author ? `${kind} — ${annotation.author}` : kind;
}

const STATES = {
  open: "Open for review",
  approved: "Approved",
  changes_requested: "Changes requested",
  closed: "Closed",
};

/** A review's state in words. */
export function stateLabel(state) {
  return STATES[state] ?? "Unknown state";
}

const STEP_STATES = { pending: "To do", "in-progress": "In progress", done: "Done" };

/** A checklist step's state in words. */
export function stepStateLabel(state) {
  return STEP_STATES[state] ?? "To do";
}

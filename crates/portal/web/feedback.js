// PLACEHOLDER (being written): feedback export.
export function feedbackText() {
  return "No changes detected.";
}

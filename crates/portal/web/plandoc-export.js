// "Copy feedback": upstream's `exportAnnotations` text for a plan and its
// annotations, byte for byte, each annotation first re-found in the plan's
// blocks for its line label. Ported from `crates/plan-doc/src/export.rs`,
// so the portal and `planshare open --format feedback` print the same text
// for the same link. Pure: no DOM.

import { count } from "{{plandoc-text.js}}";
import { parseBlocks } from "{{plandoc-blocks.js}}";
import { anchorAnnotations } from "{{plandoc-anchor.js}}";

/** Upstream's default document title. */
export const DEFAULT_TITLE = "Plan Feedback";
/** Upstream's default name for what was reviewed. */
export const DEFAULT_SUBJECT = "plan";

/** A block's last source line, as upstream's export computes it. */
export function endLine(block) {
  const start = block.startLine;
  if (block.sourceLineCount > 0) return start + block.sourceLineCount - 1;
  if (!block.content) return start;
  const n = count(block.content, "\n") + 1;
  if (block.type === "code" || block.type === "directive") return start + n + 1;
  return block.alertKind != null ? start + n : start + n - 1;
}

/** `line L` or `lines A–B` for an annotation, or null (no block, a global
 * comment, a diff block, an unknown id). */
export function lineLabel(blocks, annotation) {
  const id = annotation.blockId ?? "";
  if (!id || annotation.type === "GLOBAL_COMMENT" || id.startsWith("diff-block-")) return null;
  const block = blocks.find((b) => b.id === id);
  if (!block) return null;
  const end = endLine(block);
  return end <= block.startLine ? `line ${block.startLine}` : `lines ${block.startLine}\u2013${end}`;
}

/** Upstream's `exportAnnotations`: the feedback text, sorted by block then
 * offset (annotations without a block first). Missing texts read
 * `undefined`, as upstream writes them; an annotation of unknown type
 * exports as a comment. */
export function exportAnnotations(blocks, annotations, globalAttachments = [], title = DEFAULT_TITLE, subject = DEFAULT_SUBJECT) {
  blocks ??= [];
  globalAttachments ??= [];
  if (!annotations.length && !globalAttachments.length) return "No changes detected.";
  const blockIndex = (a) => blocks.findIndex((b) => b.id === (a.blockId ?? ""));
  const sorted = annotations
    .map((a) => [blockIndex(a), a.startOffset ?? 0, a])
    .sort((x, y) => x[0] - y[0] || x[1] - y[1])
    .map((entry) => entry[2]);
  let out = `# ${title}\n\n`;
  if (globalAttachments.length) {
    out += "## Reference Images\nPlease review these reference images (use the Read tool to view):\n";
    globalAttachments.forEach((img, i) => (out += `${i + 1}. [${img.name}] \`${img.path}\`\n`));
    out += "\n";
  }
  if (annotations.length) {
    const n = annotations.length;
    out += `I've reviewed this ${subject} and have ${n} piece${n > 1 ? "s" : ""} of feedback:\n\n`;
  }
  const labels = new Map();
  sorted.forEach((a, i) => {
    out += `## ${i + 1}. `;
    const label = lineLabel(blocks, a);
    if (a.diffContext) out += "[In diff content] ";
    else if (label) out += `(${label}) `;
    out += body(a, subject);
    if (a.images?.length) {
      out += "**Attached images:**\n";
      for (const img of a.images) out += `- [${img.name}] \`${img.path}\`\n`;
    }
    out += "\n";
    if (a.isQuickLabel && a.text) labels.set(a.text, (labels.get(a.text) ?? 0) + 1);
  });
  out += "---\n";
  if (labels.size) {
    out += "\n## Label Summary\n\n";
    for (const [text, n] of labels) out += `- **${text}**: ${n}\n`;
    out += "\n";
  }
  return out;
}

/** One annotation's text after its `## i. ` heading and line label. */
function body(a, subject) {
  const text = a.text ?? "undefined";
  const original = a.originalText ?? "";
  const comment = (t) => {
    if (!a.isQuickLabel) return `Feedback on: "${original}"\n> ${t}\n`;
    return `[${t}] Feedback on: "${original}"\n${a.quickLabelTip ? `> ${a.quickLabelTip}\n` : ""}`;
  };
  switch (a.type) {
    case "DELETION":
      return `Remove this\n\`\`\`\n${original}\n\`\`\`\n> I don't want this in the ${subject}.\n`;
    case "COMMENT":
      return comment(text);
    case "GLOBAL_COMMENT":
      return `General feedback about the ${subject}\n> ${text}\n`;
    case "INSERTION":
      return `Add this\n\`\`\`\n${text}\n\`\`\`\n`;
    case "REPLACEMENT":
      return `Change this\n**From:**\n\`\`\`\n${original}\n\`\`\`\n**To:**\n\`\`\`\n${text}\n\`\`\`\n`;
    default:
      // Upstream's single-entry export reads a missing text as "" here.
      return comment(a.isQuickLabel ? text : (a.text ?? ""));
  }
}

/** The feedback text for a plan and the portal's annotations: what
 * `planshare open --format feedback` prints for the same link. Like the
 * CLI's decoding, a global comment carries no diff context. */
export function feedbackText(markdown, annotations, attachments = []) {
  const blocks = parseBlocks(markdown);
  const decoded = annotations.map((a) => (a.type === "GLOBAL_COMMENT" && a.diffContext ? { ...a, diffContext: undefined } : a));
  return exportAnnotations(blocks, anchorAnnotations(blocks, decoded), attachments);
}

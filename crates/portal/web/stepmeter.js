// The step meter of a checklist plan, in the side panel: `n/m` done, a
// progress bar, the current step, and every step with its state. The
// steps come from plandoc-steps.js (a port of plan-doc's, held to it by
// `crates/plan-doc/tests/js_ports.rs`), so the page shows the steps
// `planshare open --format json` reports. Step texts enter as text only.

import { renderInline } from "{{plandoc-render.js}}";
import { planSteps } from "{{plandoc-steps.js}}";
import { stepStateLabel } from "{{words.js}}";

const $ = (id) => document.getElementById(id);

/** A step's text as the plan shows it (no backticks or asterisks). */
function shown(text) {
  try {
    return renderInline(text).text.trim() || text;
  } catch {
    return text;
  }
}

/** Shows the steps of `markdown` in the `#steps` section, or hides it when
 * the plan has no checklist. */
export function renderSteps(markdown) {
  const section = $("steps");
  const steps = markdown ? planSteps(markdown) : null;
  if (!steps) {
    section.hidden = true;
    return;
  }
  const meter = $("steps-meter");
  meter.max = steps.total;
  meter.value = steps.done;
  $("steps-count").textContent = `${steps.done}/${steps.total} steps done`;
  const current = steps.current === null ? null : steps.items[steps.current];
  $("steps-current").textContent = current
    ? `${current.state === "in-progress" ? "Now" : "Next"}: ${shown(current.text)}`
    : "Every step is done.";
  $("steps-list").replaceChildren(
    ...steps.items.map((step, i) => {
      const li = document.createElement("li");
      li.className = step.state;
      li.textContent = shown(step.text) || "(no text)";
      const state = document.createElement("span");
      state.className = "visually-hidden";
      state.textContent = ` (${stepStateLabel(step.state)}${i === steps.current ? ", current" : ""})`;
      li.append(state);
      if (i === steps.current) li.setAttribute("aria-current", "step");
      return li;
    }),
  );
  section.hidden = false;
}

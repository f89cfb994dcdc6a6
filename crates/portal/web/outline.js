// The outline of a long plan: its headings as a list of buttons that
// scroll to them. Shown only when the plan has enough headings to need
// one. Works on the rendered (sanitised) plan; heading texts enter the
// list as text only.

/** Plans with fewer headings than this get no outline. */
const MIN_HEADINGS = 4;
/** Deeper headings are left out (an outline, not a table of everything). */
const MAX_LEVEL = 3;

/** Fills `list` with `plan`'s headings and shows `nav` when there are
 * enough of them; hides it otherwise. */
export function renderOutline(nav, list, plan) {
  const headings = [...plan.querySelectorAll("h1, h2, h3, h4, h5, h6")].filter(
    (h) => Number(h.tagName[1]) <= MAX_LEVEL && h.textContent.trim() !== "",
  );
  if (headings.length < MIN_HEADINGS) {
    nav.hidden = true;
    list.replaceChildren();
    return;
  }
  const top = Math.min(...headings.map((h) => Number(h.tagName[1])));
  list.replaceChildren(
    ...headings.map((heading) => {
      const li = document.createElement("li");
      li.className = `depth-${Number(heading.tagName[1]) - top}`;
      const go = document.createElement("button");
      go.type = "button";
      go.className = "link";
      go.textContent = heading.textContent.trim();
      go.addEventListener("click", () => {
        heading.scrollIntoView({ block: "start" });
        heading.tabIndex = -1;
        heading.focus({ preventScroll: true });
      });
      li.append(go);
      return li;
    }),
  );
  nav.hidden = false;
}

// Keyboard use: single-key shortcuts for the page's main actions, and the
// `?` dialog that lists them. A shortcut only fires when no text field has
// the focus, no dialog is open and no modifier is held, so typing a
// comment never triggers one; the help lists only what the page offers
// right now (Approve only where there is something to approve).

/** Shortcuts: `{ keys: ["n", "j"], label, run, available? }`. */
const shortcuts = [];

function typing(target) {
  if (!(target instanceof Element)) return false;
  return target.closest("input, textarea, select, [contenteditable]:not([contenteditable=false])") !== null;
}

function dialogOpen() {
  return document.querySelector("dialog[open]") !== null;
}

/** Adds shortcuts; `available()` (default: always) says whether one
 * applies on the page as it is now. */
export function addShortcuts(...more) {
  shortcuts.push(...more);
}

function offered() {
  return shortcuts.filter((s) => !s.available || s.available());
}

/** Fills the help dialog's list with the shortcuts on offer and opens it. */
export function showHelp(dialog, list) {
  list.replaceChildren(
    ...offered().map((s) => {
      const row = document.createElement("div");
      const keys = document.createElement("dt");
      for (const [i, key] of s.keys.entries()) {
        if (i) keys.append(" or ");
        const kbd = document.createElement("kbd");
        kbd.textContent = key;
        keys.append(kbd);
      }
      const what = document.createElement("dd");
      what.textContent = s.label;
      row.append(keys, what);
      return row;
    }),
  );
  dialog.showModal();
}

/** Listens for the shortcuts on `document`. */
export function listen() {
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target) || dialogOpen()) return;
    const shortcut = offered().find((s) => s.keys.includes(event.key));
    if (!shortcut) return;
    event.preventDefault();
    shortcut.run();
  });
}

// A link to hand to one person: the link as selectable text, a Copy
// button, and a QR code a phone can scan (drawn on demand: the QR encoder,
// qrcode.mjs, is loaded only then). Links here carry secrets in their
// fragment, so they are drawn locally and never sent anywhere.

const SVG = "http://www.w3.org/2000/svg";
/** Modules of blank border around the code (the standard's quiet zone). */
const QUIET = 4;

/** An SVG QR code of `text` (byte mode, error correction M). */
export async function qrCode(text, label) {
  const { default: qrcode } = await import("{{qrcode.mjs}}");
  const code = qrcode(0, "M");
  code.addData(text, "Byte");
  code.make();
  const n = code.getModuleCount();
  const side = n + 2 * QUIET;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${side} ${side}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  svg.setAttribute("shape-rendering", "crispEdges");
  svg.classList.add("qr");
  const ground = document.createElementNS(SVG, "rect");
  ground.setAttribute("width", side);
  ground.setAttribute("height", side);
  ground.setAttribute("fill", "#fff");
  const dark = [];
  for (let row = 0; row < n; row++) {
    for (let col = 0; col < n; col++) {
      if (code.isDark(row, col)) dark.push(`M${col + QUIET} ${row + QUIET}h1v1h-1z`);
    }
  }
  const modules = document.createElementNS(SVG, "path");
  modules.setAttribute("d", dark.join(""));
  modules.setAttribute("fill", "#000");
  svg.append(ground, modules);
  svg.dataset.modules = String(n);
  return svg;
}

/** Copies `text`, or leaves it selected in `field` for the person to copy. */
async function copy(field, note) {
  field.select();
  try {
    await navigator.clipboard.writeText(field.value);
    note.textContent = "Copied to the clipboard.";
  } catch {
    note.textContent = "Select the link and copy it (this browser does not let the page copy).";
  }
}

/** A card for the link `url`, headed `title`: the link, Copy, and a QR
 * shown on request. `hint` says what the link is for. */
export function linkCard(title, url, hint) {
  const card = document.createElement("section");
  card.className = "link-card";
  const heading = document.createElement("h3");
  heading.textContent = title;
  const field = document.createElement("textarea");
  field.readOnly = true;
  field.rows = 2;
  field.value = url;
  field.setAttribute("aria-label", title);
  const about = document.createElement("p");
  about.className = "meta";
  about.textContent = hint;
  const note = document.createElement("p");
  note.className = "meta";
  note.setAttribute("role", "status");
  const actions = document.createElement("div");
  actions.className = "actions";
  const copyButton = document.createElement("button");
  copyButton.type = "button";
  copyButton.textContent = "Copy";
  copyButton.setAttribute("aria-label", `Copy the ${title.toLowerCase()}`);
  copyButton.addEventListener("click", () => copy(field, note));
  const qrButton = document.createElement("button");
  qrButton.type = "button";
  qrButton.textContent = "Show QR code";
  qrButton.setAttribute("aria-expanded", "false");
  const figure = document.createElement("figure");
  figure.hidden = true;
  qrButton.addEventListener("click", async () => {
    if (!figure.hidden) {
      figure.hidden = true;
      qrButton.textContent = "Show QR code";
      qrButton.setAttribute("aria-expanded", "false");
      return;
    }
    if (!figure.firstChild) {
      try {
        figure.append(await qrCode(url, `QR code of the ${title.toLowerCase()}`));
      } catch (error) {
        note.textContent = `No QR code for this link: ${error?.message ?? error}`;
        return;
      }
    }
    figure.hidden = false;
    qrButton.textContent = "Hide QR code";
    qrButton.setAttribute("aria-expanded", "true");
  });
  actions.append(copyButton, qrButton);
  card.append(heading, about, field, actions, figure, note);
  return card;
}

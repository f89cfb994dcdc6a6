// The plan and its annotations on the page, as both pages show them: the
// rendered plan with the annotations highlighted, the side list, selecting
// text to comment on or delete, the comment dialog, removing with undo,
// "Copy feedback", the shortcuts for these, and drafts that survive a
// reload. Everything untrusted that is not the plan's markdown
// (annotations, authors, image names) enters the page as text only.
//
// `annotating(state, page)` works on the page's own state object
// (`plan`, `html`, `annotations`, `attachments`, `next`, `changed`,
// `draftKey`, `pending`, `editing`, `removed`, `author`) and asks `page`
// where a share page and a review page differ:
//
// - `what()`: what the page shows, for the tab's title;
// - `decorate(plan)`: after the highlights are drawn;
// - `itemLook(li, a)`, `itemTags(a)`: an annotation's look and tags in the list;
// - `editable(a)`: whether the list offers Edit and Remove for it;
// - `authored()`: the fields a new annotation gets after its text;
// - `touched()`: the page's annotations changed;
// - `closed()`: no annotation can be added or put back now;
// - `removedNote(a)`: what the undo bar adds about a removal;
// - `redraft(a)`: an annotation was edited or put back;
// - `authorTyped()`: the name field changed;
// - `unsaved()`: the annotations a draft keeps, or null;
// - `restore(annotations)`: takes a reloaded draft's annotations;
// - `itemEnd(li, a)` (optional): adds to a listed annotation (a review's
//   thread: its replies and reply box);
// - `unsavedReplies()`, `restoreReplies(replies)` (optional): the replies
//   being typed that a draft keeps (an object, or null), and taking them
//   back after a reload.

import { clearHighlights, highlight, placeable } from "{{highlighter.js}}";
import { render, renderHtml } from "{{plan-view.js}}";
import { feedbackText } from "{{plandoc-export.js}}";
import { annotationHeading, kindLabel } from "{{words.js}}";
import { addShortcuts, showHelp } from "{{keys.js}}";
import { renderOutline } from "{{outline.js}}";
import { renderSteps } from "{{stepmeter.js}}";
import { draftKey, dropDraft, loadDraft, saveDraft } from "{{drafts.js}}";
import { $, author, el, setAuthor } from "{{page-common.js}}";

/** What of an annotation a draft keeps (no ids: they are made anew). */
export function plainAnnotation(a) {
  const { type, originalText, text, author, images, isQuickLabel, diffContext, source } = a;
  return { type, originalText, text, author, images, isQuickLabel, diffContext, source };
}

export function annotating(state, page) {
  /** Renders the plan and its annotations from `state`. */
  function show() {
    const plan = $("plan");
    if (state.html !== null) {
      renderHtml(plan, state.html);
    } else {
      render(plan, state.plan);
    }
    performance.mark("planshare:rendered");
    $("editor").hidden = false;
    const heading = plan.querySelector("h1, h2")?.textContent.trim();
    const what = page.what();
    document.title = heading ? `${heading.slice(0, 80)} — planshare ${what}` : `planshare — ${what}`;
    refresh();
    if (state.html === null) renderOutline($("outline"), $("outline-list"), plan);
    renderSteps(state.html === null ? state.plan : "");
  }

  /** Redraws the highlights and the annotation list. */
  function refresh() {
    const plan = $("plan");
    clearHighlights(plan);
    const none = new Set();
    const found =
      state.html === null
        ? highlight(plan, state.annotations, { plan: state.plan })
        : { placed: none, notSearched: none, unshown: none };
    page.decorate(plan);
    const list = $("annotation-list");
    // A field being typed in that the new list holds again (a reply box
    // the page keeps) keeps the focus and the caret.
    const focused = list.contains(document.activeElement) ? document.activeElement : null;
    const caret = focused?.tagName === "TEXTAREA" ? [focused.selectionStart, focused.selectionEnd] : null;
    list.replaceChildren(...state.annotations.map((a) => annotationItem(a, found)));
    if (focused && focused !== document.activeElement && list.contains(focused)) {
      focused.focus({ preventScroll: true });
      if (caret) focused.setSelectionRange(...caret);
    }
    const files = $("attachment-list");
    files.replaceChildren(
      ...state.attachments.map((image) => el("li", "meta", `${image.name} — ${image.path}`)),
    );
    $("attachments").hidden = state.attachments.length === 0;
    const n = state.annotations.length;
    $("status").textContent = `${n} annotation${n === 1 ? "" : "s"}`;
  }

  /** One annotation of the side list; `found` is what the highlighter
   * reported (`placed`, `notSearched`, `unshown` sets of annotation ids). */
  function annotationItem(a, { placed, notSearched, unshown }) {
    const li = el("li");
    li.dataset.annotationId = a.id;
    page.itemLook(li, a);
    const tags = page.itemTags(a);
    li.append(el("div", "meta", [annotationHeading(a), ...tags].join(" · ")));
    if (a.originalText) li.append(el("q", null, a.originalText));
    if (a.text) li.append(el("p", null, a.text));
    for (const image of a.images ?? []) li.append(el("div", "meta", `${image.name} — ${image.path}`));
    if (placeable(a) && state.html === null) {
      if (placed.has(a.id)) {
        li.tabIndex = 0;
        const go = () => $("plan").querySelector(`mark[data-bind-id="${CSS.escape(a.id)}"]`)?.scrollIntoView({ block: "center" });
        // Not from its controls (a thread's reply box, its buttons).
        li.addEventListener("click", (e) => !e.target.closest("button, textarea, input, label, summary") && go());
        li.addEventListener("keydown", (e) => e.key === "Enter" && e.target === li && go());
      } else {
        li.classList.add("not-found");
        li.append(el("div", "meta", notSearched.has(a.id)
          ? "not searched: the plan is too large to look for every annotation"
          : unshown?.has(a.id)
            ? "in the plan's text, but on a part the page shows as no text"
            : "not found in the plan"));
      }
    }
    if (page.editable(a)) li.append(itemTools(a));
    page.itemEnd?.(li, a);
    return li;
  }

  /** Edit and Remove for a listed annotation. */
  function itemTools(a) {
    const what = `${kindLabel(a).toLowerCase()}: ${a.originalText || a.text || ""}`.replace(/: $/, "");
    const tools = el("div", "item-tools");
    if (a.type === "COMMENT" || a.type === "GLOBAL_COMMENT") {
      const edit = el("button", "link", "Edit");
      edit.type = "button";
      edit.setAttribute("aria-label", `Edit ${what}`);
      edit.addEventListener("click", () => openComment(a.originalText ?? "", a));
      tools.append(edit);
    }
    const drop = el("button", "link remove", "Remove");
    drop.type = "button";
    drop.setAttribute("aria-label", `Remove ${what}`);
    drop.addEventListener("click", () => remove(a));
    tools.append(drop);
    return tools;
  }

  function addAnnotation(type, originalText, text) {
    state.annotations.push({
      id: `local-${state.next++}`,
      type,
      originalText,
      text: text || undefined,
      ...page.authored(),
    });
    page.touched();
    refresh();
    saveWork();
  }

  /** Moves the focus to the next (`step` 1) or previous (-1) listed
   * annotation that is highlighted in the plan, and scrolls to it. */
  function stepAnnotation(step) {
    const items = [...$("annotation-list").querySelectorAll("li[tabindex]")];
    if (!items.length) return;
    const at = items.indexOf(document.activeElement);
    const next = at < 0 ? (step > 0 ? 0 : items.length - 1) : (at + step + items.length) % items.length;
    items[next].focus();
    items[next].click();
  }

  // --- Selecting text → comment or deletion -------------------------------

  /** The selected text inside the plan, or "". */
  function selectedText() {
    const selection = getSelection();
    if (!selection || selection.isCollapsed || !selection.rangeCount) return "";
    const range = selection.getRangeAt(0);
    if (!$("plan").contains(range.commonAncestorContainer)) return "";
    return selection.toString().trim();
  }

  function onSelection() {
    const tools = $("selection-tools");
    const text = state.html === null && !page.closed() ? selectedText() : "";
    if (!text) {
      if (!tools.contains(document.activeElement)) tools.hidden = true;
      return;
    }
    state.pending = text;
    const rect = getSelection().getRangeAt(0).getBoundingClientRect();
    tools.style.top = `${scrollY + rect.bottom + 6}px`;
    tools.style.left = `${Math.max(8, scrollX + rect.left)}px`;
    tools.hidden = false;
  }

  /** Opens the comment dialog on `originalText` (a global comment when
   * ""), to edit annotation `edit` or, when null, to add one. */
  function openComment(originalText, edit = null) {
    state.pending = originalText;
    state.editing = edit;
    $("comment-title").textContent = edit ? "Edit comment" : "Comment";
    $("comment-save").textContent = edit ? "Save" : "Add comment";
    $("comment-quote").textContent = originalText;
    $("comment-quote").hidden = !originalText;
    $("comment-text").value = edit?.text ?? "";
    $("comment-dialog").showModal();
    $("comment-text").focus();
  }

  /** Marks this page's annotations changed (a review's as unsent). */
  function changed() {
    page.touched();
    refresh();
    saveWork();
  }

  function remove(a) {
    const at = state.annotations.indexOf(a);
    if (at < 0) return;
    state.annotations.splice(at, 1);
    state.removed = { a, at };
    $("undo-text").textContent = `${kindLabel(a)} removed${page.removedNote(a)}.`;
    $("undo").hidden = false;
    changed();
  }

  function undoRemove() {
    if (!state.removed) return;
    const { a, at } = state.removed;
    state.removed = null;
    $("undo").hidden = true;
    if (page.closed()) return;
    // Taken back after its withdrawal was sent, it is to be sent again.
    page.redraft(a);
    state.annotations.splice(Math.min(at, state.annotations.length), 0, a);
    changed();
  }

  // --- Copy feedback ------------------------------------------------------

  function openFeedback() {
    const text = feedbackText(state.html !== null ? "" : state.plan, state.annotations, state.attachments);
    $("feedback-text").value = text;
    $("feedback-dialog").showModal();
    $("feedback-text").select();
    navigator.clipboard?.writeText(text).then(
      () => ($("feedback-note").textContent = "Copied to the clipboard."),
      () => ($("feedback-note").textContent = "Select the text and copy it."),
    );
  }

  // --- Drafts that survive a reload ---------------------------------------

  /** Files this page's unsaved work under its link's draft: a share page's
   * annotations once changed, a review page's unsent comments, and the
   * comment being typed. Nothing to keep: the draft is dropped. */
  function saveWork() {
    if (!state.draftKey) return;
    const typing = $("comment-dialog").open && $("comment-text").value !== ""
      ? { quote: state.pending, text: $("comment-text").value }
      : null;
    const annotations = page.unsaved();
    const replies = page.unsavedReplies?.() ?? null;
    if (annotations === null && typing === null && replies === null) {
      dropDraft(state.draftKey);
      return;
    }
    saveDraft(state.draftKey, { annotations, typing, replies });
  }

  /** Files drafts under `identity` from now on, and brings back what was
   * filed there before a reload. */
  async function restoreWork(identity) {
    try {
      state.draftKey = await draftKey(identity);
    } catch {
      return;
    }
    const draft = loadDraft(state.draftKey);
    if (!draft) return;
    if (Array.isArray(draft.annotations)) {
      const restored = draft.annotations
        .filter((a) => a && typeof a === "object")
        .map((a) => ({ ...a, id: `draft-${state.next++}` }));
      page.restore(restored);
      refresh();
      $("status").textContent += " · your unsaved annotations were restored";
    }
    if (draft.replies && typeof draft.replies === "object" && page.restoreReplies) {
      page.restoreReplies(draft.replies);
      refresh();
    }
    if (draft.typing && typeof draft.typing.text === "string") {
      openComment(typeof draft.typing.quote === "string" ? draft.typing.quote : "");
      $("comment-text").value = draft.typing.text;
    }
  }

  // --- Wiring -------------------------------------------------------------

  /** Wires the plan, the annotation tools, the comment dialog, "Copy
   * feedback" and their shortcuts. */
  function wire() {
    document.addEventListener("selectionchange", onSelection);
    $("add-comment").addEventListener("click", () => {
      $("selection-tools").hidden = true;
      openComment(state.pending);
    });
    $("add-deletion").addEventListener("click", () => {
      $("selection-tools").hidden = true;
      addAnnotation("DELETION", state.pending);
      getSelection()?.removeAllRanges();
    });
    $("global-comment").addEventListener("click", () => openComment(""));
    $("comment-form").addEventListener("submit", (e) => {
      if (e.submitter?.value !== "save") return;
      const text = $("comment-text").value.trim();
      if (!text) {
        e.preventDefault();
        return;
      }
      if (state.editing) {
        const edited = state.editing;
        state.editing = null;
        if (edited.text !== text) {
          edited.text = text;
          page.redraft(edited);
          changed();
        }
        return;
      }
      addAnnotation(state.pending ? "COMMENT" : "GLOBAL_COMMENT", state.pending, text);
      getSelection()?.removeAllRanges();
    });
    // Keep the selection while a toolbar button is pressed.
    $("selection-tools").addEventListener("mousedown", (e) => e.preventDefault());
    $("author").addEventListener("input", (e) => {
      const name = e.target.value.trim();
      if (name) setAuthor(state, name);
      page.authorTyped();
    });
    $("copy-feedback").addEventListener("click", openFeedback);
    $("author").value = author(state);
    const shown = () => !$("editor").hidden;
    const markdown = () => shown() && state.html === null;
    addShortcuts(
      { keys: ["n", "j"], label: "Next annotation", run: () => stepAnnotation(1), available: markdown },
      { keys: ["p", "k"], label: "Previous annotation", run: () => stepAnnotation(-1), available: markdown },
      {
        keys: ["c"],
        label: "Comment on the selected text",
        run: () => {
          const text = selectedText();
          if (!text) {
            $("status").textContent = "Select some text of the plan first, then press c.";
            return;
          }
          $("selection-tools").hidden = true;
          openComment(text);
        },
        available: markdown,
      },
      { keys: ["g"], label: "Comment on the plan", run: () => openComment(""), available: shown },
      { keys: ["?"], label: "Show these shortcuts", run: () => showHelp($("help-dialog"), $("help-list")) },
    );
    $("help").addEventListener("click", () => showHelp($("help-dialog"), $("help-list")));
    $("undo-button").addEventListener("click", undoRemove);
    $("comment-text").addEventListener("input", saveWork);
    $("comment-dialog").addEventListener("close", saveWork);
  }

  return { show, refresh, openComment, saveWork, restoreWork, wire };
}

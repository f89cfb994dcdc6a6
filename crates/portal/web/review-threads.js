// A review's threads on the review page. Every comment in a writer's set
// is the root of a thread (the rules: plan-doc's threads.rs, applied here
// by plandoc-threads.js); this module shows each thread in its comment's
// card in the side panel, which stays beside the plan: the replies, each
// author's name in a colour of their own, a reply box, Resolve or Reopen
// for those the rules let change the thread, "addressed in vN". A resolved
// thread is folded to one line and opens on demand. Selecting a highlight
// in the plan selects its card. The reply boxes are kept across the
// list's redraws (a change arriving live never takes what is typed) and
// across reloads (drafts.js, through annotating.js).
//
// `threadsUi(state, page)` reads the review page's `state` (`view`,
// `threads`: the threads by id, `ended`) and asks `page` to
// `sendReply(thread, text, addressed, sent)` (`sent` runs once it is stored,
// before the page is drawn again), `changeState(thread, to)` (both
// promises; they say in the review bar how it went) and `saveWork()`.

import { mayChangeState } from "{{plandoc-threads.js}}";
import { $, el } from "{{page-common.js}}";

/** A colour (hue) per author name, the same on every page. */
export function hueOf(name) {
  let hue = 0;
  for (const c of name) hue = (hue * 31 + c.codePointAt(0)) % 360;
  return hue;
}

/** `text` cut to about `n` characters, for a button's label. */
function short(text, n = 60) {
  const t = (text ?? "").replace(/\s+/g, " ").trim();
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

/** What a thread is about, for labels: "Bea's comment “ten percent”". */
function about(thread) {
  const what = short(thread.quote || thread.text);
  return `${thread.author}'s comment${what ? ` “${what}”` : ""}`;
}

/** "Ann" for a name, in the author's colour. (Divs, as everything in the
 * list that holds review text: the XSS test allows no other markup there.) */
function who(name) {
  const node = el("div", "who by-author", name);
  node.style.setProperty("--author-hue", String(hueOf(name)));
  return node;
}

export function threadsUi(state, page) {
  /** The reply boxes by thread id, made once and kept across redraws,
   * with whether each is open. */
  const boxes = new Map();
  /** The annotation whose card is selected (its highlight was chosen). */
  let selected = null;

  /** The thread an annotation is the root of, if it is sent. */
  function threadOf(a) {
    return a.threadId ? state.threads.get(a.threadId) : undefined;
  }

  /** Whether this writer may reply to threads and change their state now. */
  function writable() {
    return state.view !== null && !state.ended;
  }

  /** The reply box of thread `id`, made on first use. */
  function boxOf(id) {
    if (boxes.has(id)) return boxes.get(id);
    const box = el("div", "reply-box");
    box.id = `reply-box-${boxes.size}`;
    const text = el("textarea");
    text.rows = 3;
    text.addEventListener("input", () => page.saveWork());
    const addressed = el("input");
    addressed.type = "checkbox";
    const addressedLabel = el("label", "addressed-choice");
    addressedLabel.append(addressed, el("span"));
    const send = el("button", "primary", "Send reply");
    send.type = "button";
    const tools = el("div", "reply-tools");
    tools.append(addressedLabel, send);
    box.append(text, tools);
    const made = { box, text, addressed, addressedLabel, send, open: false };
    send.addEventListener("click", () => sendFrom(id, made));
    boxes.set(id, made);
    return made;
  }

  /** Sends what box `made` of thread `id` holds. */
  async function sendFrom(id, made) {
    const thread = state.threads.get(id);
    if (!thread) return;
    const latest = state.view.latest;
    const addressed = state.view.you.role === "owner" && made.addressed.checked ? latest : undefined;
    const text = made.text.value.trim() || (addressed ? `Addressed in v${latest}.` : "");
    if (!text) {
      $("review-note").textContent = "Type a reply first.";
      made.text.focus();
      return;
    }
    made.send.disabled = true;
    try {
      await page.sendReply(thread, text, addressed, () => {
        made.text.value = "";
        made.addressed.checked = false;
        made.open = false;
        page.saveWork();
      });
    } finally {
      made.send.disabled = false;
    }
  }

  /** One reply: who, when, what (text only). */
  function replyItem(reply) {
    const item = el("div", "reply by-author");
    item.style.setProperty("--author-hue", String(hueOf(reply.author)));
    const head = el("div", "reply-head");
    head.append(who(reply.author));
    const when = new Date(reply.at);
    const tags = [when.toLocaleString()];
    if (reply.addressed !== undefined) tags.push(`addressed in v${reply.addressed}`);
    head.append(el("div", "meta", `· ${tags.join(" · ")}`));
    item.append(head, el("div", "said", reply.text));
    return item;
  }

  /** The buttons of a thread: Reply, and Resolve or Reopen when allowed. */
  function threadTools(thread, made) {
    const tools = el("div", "thread-tools");
    if (!writable()) return tools;
    const reply = el("button", "link", "Reply");
    reply.type = "button";
    reply.dataset.threadAction = "reply";
    reply.setAttribute("aria-label", `Reply to ${about(thread)}`);
    reply.setAttribute("aria-expanded", String(made.open));
    reply.setAttribute("aria-controls", made.box.id);
    reply.addEventListener("click", () => {
      made.open = !made.open;
      made.box.hidden = !made.open;
      reply.setAttribute("aria-expanded", String(made.open));
      if (made.open) made.text.focus();
    });
    tools.append(reply);
    const you = state.view.you;
    if (mayChangeState(thread, you.link, you.role)) {
      const to = thread.state === "resolved" ? "open" : "resolved";
      const change = el("button", "link", to === "open" ? "Reopen" : "Resolve");
      change.type = "button";
      change.dataset.threadAction = to;
      change.setAttribute("aria-label", `${to === "open" ? "Reopen" : "Resolve"} the thread of ${about(thread)}`);
      change.addEventListener("click", async () => {
        change.disabled = true;
        await page.changeState(thread, to);
        change.disabled = false;
        // The list was drawn again: the focus goes to the thread's new button.
        document.querySelector(`li[data-thread-id="${CSS.escape(thread.id)}"] [data-thread-action]:not([data-thread-action="reply"])`)
          ?.focus({ preventScroll: true });
      });
      tools.append(change);
    }
    return tools;
  }

  /** Adds annotation `a`'s thread to its card `li`: replies, tools, the
   * reply box (folded away when resolved). Nothing for a comment not sent
   * yet, or for the plan's own annotations. */
  function itemEnd(li, a) {
    const thread = threadOf(a);
    if (!thread) return;
    li.dataset.threadId = thread.id;
    li.classList.add("thread");
    if (a.id === selected) li.classList.add("selected");
    const made = boxOf(thread.id);
    made.open ||= made.text.value !== "";
    made.box.hidden = !made.open;
    const owner = state.view.you.role === "owner";
    made.addressedLabel.hidden = !owner;
    made.addressedLabel.lastChild.textContent = ` addressed in v${state.view.latest} (the latest)`;
    made.text.setAttribute("aria-label", `Your reply to ${about(thread)}`);
    const body = [];
    if (thread.replies.length) {
      const replies = el("div", "replies");
      replies.setAttribute("role", "group");
      replies.setAttribute("aria-label", `Replies to ${about(thread)}`);
      replies.append(...thread.replies.map(replyItem));
      body.push(replies);
    }
    body.push(threadTools(thread, made));
    if (writable()) body.push(made.box);
    if (thread.state !== "resolved") {
      li.append(...body);
      return;
    }
    li.classList.add("resolved");
    const fold = el("details", "thread-fold");
    const n = thread.replies.length;
    fold.append(el("summary", null, `Resolved${thread.stateBy ? ` by ${thread.stateBy}` : ""} — show the thread${n ? ` (${n} repl${n === 1 ? "y" : "ies"})` : ""}`));
    fold.append(...body);
    fold.open = made.open || a.id === selected;
    li.append(fold);
  }

  /** The tags a thread adds to its card's heading line. */
  function tags(a) {
    const thread = threadOf(a);
    if (!thread) return [];
    const out = [];
    if (thread.state === "resolved") out.push("resolved");
    if (thread.addressed !== undefined) out.push(`addressed in v${thread.addressed}`);
    return out;
  }

  /** Marks the highlights of resolved threads and of the selected one. */
  function decorate(plan, byId) {
    for (const mark of plan.querySelectorAll("mark[data-bind-id]")) {
      const a = byId.get(mark.dataset.bindId);
      const thread = a && threadOf(a);
      mark.classList.toggle("resolved", thread?.state === "resolved");
      mark.classList.toggle("selected", mark.dataset.bindId === selected);
    }
  }

  /** Selects annotation `id`'s card: shown in the side panel, its thread
   * unfolded, its highlight marked. */
  function select(id, { scroll = true } = {}) {
    selected = id;
    for (const mark of $("plan").querySelectorAll("mark[data-bind-id]")) {
      mark.classList.toggle("selected", mark.dataset.bindId === id);
    }
    let card = null;
    for (const li of $("annotation-list").children) {
      const on = li.dataset.annotationId === id;
      li.classList.toggle("selected", on);
      if (on) card = li;
    }
    if (!card) return;
    const fold = card.querySelector("details.thread-fold");
    if (fold) fold.open = true;
    if (scroll) {
      card.scrollIntoView({ block: "nearest" });
      if (card.tabIndex >= 0) card.focus({ preventScroll: true });
    }
  }

  /** The replies being typed, by thread id (null: none). */
  function unsavedReplies() {
    const typed = {};
    for (const [id, made] of boxes) if (made.text.value.trim()) typed[id] = made.text.value;
    return Object.keys(typed).length ? typed : null;
  }

  /** Takes back the replies a reload's draft kept. */
  function restoreReplies(typed) {
    for (const [id, text] of Object.entries(typed)) {
      if (typeof text !== "string" || !text) continue;
      const made = boxOf(id);
      made.text.value = text;
      made.open = true;
    }
  }

  /** How many threads are open. */
  function openCount() {
    let n = 0;
    for (const thread of state.threads.values()) if (thread.state === "open") n++;
    return n;
  }

  /** Selecting a highlight selects its card; choosing a card too. */
  function wire() {
    $("plan").addEventListener("click", (e) => {
      const mark = e.target.closest?.("mark[data-bind-id]");
      if (mark && state.view) select(mark.dataset.bindId);
    });
    $("annotation-list").addEventListener("click", (e) => {
      const li = e.target.closest?.("#annotation-list > li");
      if (li && state.view && !e.target.closest("button, textarea, input, label, summary")) {
        select(li.dataset.annotationId, { scroll: false });
      }
    });
  }

  return { itemEnd, tags, decorate, select, unsavedReplies, restoreReplies, openCount, wire };
}

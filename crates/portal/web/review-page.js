// The review page: a live review (`/r/<id>#key=…&t=…`) as its owner or a
// reviewer sees it. It reads the review's latest plan and every comment
// set, opened here with the link's key (the service stores only
// ciphertext); sends this writer's comments, merged with a newer set sent
// from another tab or device; follows the review's events (news bar, live
// note, the tab's title while hidden); shows versions, the threads
// (review-threads.js: replies, resolving), the rounds and their decisions;
// and gives the owner reviewer links, and the owner and approvers the
// decision itself.

import { annotationFromTuple } from "{{codec.js}}";
import { ERROR_CODES } from "{{error-codes.js}}";
import { stateLabel } from "{{words.js}}";
import { addShortcuts, listen as listenForShortcuts } from "{{keys.js}}";
import { keepFragment } from "{{drafts.js}}";
import {
  ReviewClient,
  commentAnnotations,
  commentAttachments,
  newThreadId,
  openBlob,
  reviewLink,
  sealCommentSet,
  sealComments,
  sealPreview,
  threadFieldsOf,
} from "{{review.js}}";
import { isThreadId, threadsOf } from "{{plandoc-threads.js}}";
import { hueOf, threadsUi } from "{{review-threads.js}}";
import { linkCard } from "{{linkcard.js}}";
import { showVersions } from "{{versions.js}}";
import { annotating, plainAnnotation } from "{{annotating.js}}";
import { sharing } from "{{sharing.js}}";
import {
  $,
  LoadError,
  REVIEWER_HINT,
  annotationsOf,
  attachmentsOf,
  author,
  chosenAuthor,
  el,
  fail,
  insecureOrigin,
  isLinkFragment,
  loadConfig,
  markPainted,
  pasteApiFor,
  sanitizerLoaded,
  shareBase,
} from "{{page-common.js}}";

const REVIEW_ERROR = "Failed to open the review.";

/** Everything the review page keeps. */
const state = {
  /** The latest version's plan (markdown, or an HTML plan's document),
   * the annotations shown (the plan's own, everyone's comments, this
   * writer's unsent ones) and the attachments; `next` numbers the
   * annotations made here. */
  plan: "", html: null, annotations: [], attachments: [], next: 0,
  /** Where this link's drafts are filed (drafts.js); `changed` stays
   * false once the review is open (unsent comments are `dirty`). */
  draftKey: null, changed: false,
  /** The selected text being annotated, the annotation the comment dialog
   * edits (null: it adds one), and the one last removed, which "Undo"
   * puts back (once). */
  pending: "", editing: null, removed: null,
  /** The reviewer's name when storage is off (page-common.js `author`). */
  author: null,
  /** The runtime configuration (/config.json). */
  config: {},
  /** For the Share dialog (sharing.js): a review page is never opened
   * from a short link, and the short link a copy was shared as. */
  fromShort: false,
  deletable: { shared: null, opened: null, pending: null },
  /** The review: its client, service, key, the last view of it, a read
   * waiting to be shown (news bar), why it ended (revoked, closed), whether
   * this writer has unsent changes, and what stops following it. */
  client: null, api: null, key: null, view: null, waiting: null, ended: null, dirty: false, stop: new AbortController(),
  /** The newest review `seq` this page has seen (a read or its own
   * send): an older read is never painted over a newer state. */
  knownSeq: 0,
  /** The revision of this writer's own set that the page's sent comments
   * are (0: none): the `base` of the next send, which the server refuses
   * when the set changed since (another tab or device of the link). */
  ownSeq: 0,
  /** The keys of the comments in that revision, to tell which of them the
   * person removed here when a send has to be merged with a newer set. */
  ownBase: [],
  /** Each version's plan fetched so far, by number (promises). */
  plans: new Map(),
  /** The latest version's payload as last opened: `{ n, opened }`
   * (versions never change, so a comment needs no new fetch of it). */
  latest: null,
  /** The decision shown above the plan (see showDecision), and whether the
   * connection to the review service is lost. */
  decisionShown: null, lost: false,
  /** Changes not yet seen while the tab was in the background, and the
   * timer that hides the live note. */
  unseen: 0, newsTimer: undefined,
  /** The threads shown, by id (plandoc-threads.js), and for each the
   * newest `at` of any state change to it (a change made here is newer). */
  threads: new Map(), changedAt: new Map(),
  /** This writer's set as the service holds it (last read or sent):
   * `{seq, version, annotations, replies, states, kept}`, or null. A reply
   * or a resolve is added to it alone, so unsent comments stay unsent. */
  ownStored: null,
};

const threads = threadsUi(state, {
  sendReply: (thread, text, addressed, sent) => sendThreadChange("Reply sent.", (stored) => ({
    replies: [...stored.replies, { id: newThreadId(), to: thread.id, text, at: Date.now(), ...(addressed ? { addressed } : {}) }],
  }), sent),
  changeState: (thread, to) => sendThreadChange(to === "resolved" ? "Thread resolved." : "Thread reopened.", (stored) => ({
    states: [...stored.states, { to: thread.id, state: to, at: Math.max(Date.now(), (state.changedAt.get(thread.id) ?? 0) + 1) }],
  })),
  saveWork: () => ui.saveWork(),
});

const ui = annotating(state, {
  what: () => (state.view ? "review" : "shared plan"),
  decorate: (plan) => {
    if (state.view) colourByAuthor(plan);
  },
  itemEnd: (li, a) => {
    if (state.view) threads.itemEnd(li, a);
  },
  unsavedReplies: () => (state.view ? threads.unsavedReplies() : null),
  restoreReplies: (typed) => {
    if (state.view) threads.restoreReplies(typed);
  },
  itemLook: (li, a) => {
    if (state.view && a.author) {
      li.classList.add("by-author");
      li.style.setProperty("--author-hue", String(hueOf(a.author)));
    }
  },
  itemTags: (a) => {
    const tags = [];
    if (state.view && a.version && a.version < state.view.latest) tags.push(`on v${a.version}`);
    if (state.view && a.own && a.draft) tags.push("not sent");
    if (state.view) tags.push(...threads.tags(a));
    return tags;
  },
  editable: (a) => !(state.view && (!a.own || state.ended || state.view.state !== "open")),
  authored: () => ({
    author: state.view ? state.view.you.name ?? ($("author").value.trim() || "you") : author(state),
    ...(state.view ? { own: true, draft: true, version: state.view.latest, threadId: newThreadId() } : {}),
  }),
  touched: () => {
    if (state.view) markDirty();
    else state.changed = true;
  },
  closed: () => state.view !== null && (state.ended !== null || state.view.state !== "open"),
  removedNote: (a) => (state.view && !a.draft ? " (withdrawn once you send)" : ""),
  redraft: (a) => {
    if (state.view) a.draft = true;
  },
  authorTyped: () => {
    if (state.view) showReviewState();
  },
  unsaved: () => {
    // A review's comments keep their thread ids: replies are filed under them.
    if (state.view) return state.dirty ? state.annotations.filter((a) => a.own).map((a) => ({ ...plainAnnotation(a), threadId: a.threadId })) : null;
    return state.changed ? state.annotations.map(plainAnnotation) : null;
  },
  restore: (restored) => {
    if (state.view) {
      for (const a of restored) {
        const threadId = typeof a.threadId === "string" && isThreadId(a.threadId) ? a.threadId : newThreadId();
        Object.assign(a, { own: true, draft: true, version: state.view.latest, threadId });
      }
      state.annotations = [...state.annotations.filter((a) => !a.own), ...restored];
      state.dirty = true;
      showReviewState();
    } else {
      state.annotations = restored;
      state.changed = true;
    }
  },
});

const share = sharing(state, {
  copyNote: () => (state.view
    ? state.view.you.role === "owner"
      ? "This link is a copy of the plan and its comments as they are now: it does not follow the review. To bring someone into the live review, give them a reviewer link of their own (Reviewer links)."
      : "This link is a copy of the plan and its comments as they are now: it does not follow the review. To bring someone into the live review, ask the review's owner for a reviewer link."
    : null),
});

// --- Each author's colour -------------------------------------------------

/** Tints each review comment's highlight with its author's colour, and
 * marks those of resolved threads and of the selected one. */
function colourByAuthor(plan) {
  const byId = new Map(state.annotations.map((a) => [a.id, a]));
  for (const mark of plan.querySelectorAll("mark[data-bind-id]")) {
    const a = byId.get(mark.dataset.bindId);
    if (!a?.author || a.type === "DELETION") continue;
    mark.classList.add("by-author");
    mark.style.setProperty("--author-hue", String(hueOf(a.author)));
  }
  threads.decorate(plan, byId);
}

// --- Reading the review ---------------------------------------------------

/** The plan of a version payload: the markdown, or an HTML plan's
 * document (what the version's digest is of). */
function htmlOf(payload) {
  return payload.r === "html" && typeof payload.h === "string" && payload.h !== "" ? payload.h : null;
}

/** Version `n`'s plan, fetched and opened once. */
function planOf(n) {
  if (!state.plans.has(n)) {
    const opened = state.client.version(n).then(async (version) => {
      const payload = await openBlob(version.data, state.key).catch(() => {
        throw new Error(`The key in the link does not open version ${n}.`);
      });
      return htmlOf(payload) ?? String(payload.p ?? "");
    });
    opened.catch(() => state.plans.delete(n));
    state.plans.set(n, opened);
  }
  return state.plans.get(n);
}

/** Version `n`'s payload, fetched and opened once for as long as it is
 * the latest. */
function latestPayload(n) {
  if (state.latest?.n !== n) {
    const opened = state.client.version(n).then((version) => openBlob(version.data, state.key).catch(() => {
      throw new LoadError("The key in the link does not open this review's plan: the link may be incomplete or changed.");
    }));
    state.latest = { n, opened };
    opened.catch(() => {
      if (state.latest?.opened === opened) state.latest = null;
    });
  }
  return state.latest.opened;
}

/** The review's latest plan and every comment set, opened with the key. */
async function readReview() {
  const view = await state.client.view();
  const payload = await latestPayload(view.latest);
  const annotations = annotationsOf(payload).map((a) => ({ ...a, id: `plan-${a.id}`, version: view.latest }));
  const attachments = attachmentsOf(payload);
  const sets = await Promise.all(view.comments.map((set) => openBlob(set.data, state.key).catch(() => null)));
  const writers = [];
  let own = null;
  for (const [i, set] of view.comments.entries()) {
    const opened = sets[i];
    if (!opened) continue; // Not sealed with this review's key: nothing a reader can show.
    const mine = set.writer === view.you.link;
    const made = commentAnnotations(set, opened, mine);
    writers.push({ set, opened, made });
    annotations.push(...made);
    if (mine) own = { seq: set.seq ?? 0, version: set.version, annotations: made, ...threadFieldsOf(opened) };
    for (const image of commentAttachments(opened)) {
      if (!attachments.some((b) => b.path === image.path)) attachments.push(image);
    }
  }
  const html = htmlOf(payload);
  state.plans.set(view.latest, Promise.resolve(html ?? String(payload.p ?? "")));
  return { view, plan: html === null ? String(payload.p ?? "") : "", html, annotations, attachments, own, ...threadsIn(writers) };
}

/** The threads of the opened comment sets `writers` (`{set, opened,
 * made}`: the view's entry, its plaintext, its annotations), by id; each
 * annotation gets the id of the thread it is the root of. Also, per
 * thread, the newest `at` of any change to its state. */
function threadsIn(writers) {
  const threads = threadsOf(writers.map(({ set, opened, made }) => ({
    writer: set.writer,
    role: set.role ?? "reviewer",
    name: set.name,
    version: set.version,
    roots: made.map((a) => ({ quote: a.originalText ?? "", text: a.text ?? "" })),
    set: opened,
  })));
  for (const { set, made } of writers) {
    // A writer's threads come in its set's order.
    const theirs = threads.filter((t) => t.writer === set.writer);
    made.forEach((a, i) => {
      a.threadId = theirs[i]?.id;
    });
  }
  const changedAt = new Map();
  for (const { opened } of writers) {
    for (const change of threadFieldsOf(opened).states) {
      if (typeof change?.to === "string" && Number.isSafeInteger(change.at)) {
        changedAt.set(change.to, Math.max(changedAt.get(change.to) ?? 0, change.at));
      }
    }
  }
  return { threads: new Map(threads.map((t) => [t.id, t])), changedAt };
}

/** What identifies a comment of this writer across reads (ids are made
 * anew on each read). */
function commentKey(a) {
  return JSON.stringify([a.type, a.originalText ?? "", a.text ?? ""]);
}

/** This writer's own set in `view`: its revision (0: none). */
function ownSeqOf(view) {
  return view.comments.find((c) => c.writer === view.you.link)?.seq ?? 0;
}

/** Takes the own comments of `read` as what the page's sent comments are. */
function adoptOwn(read) {
  state.ownSeq = ownSeqOf(read.view);
  state.ownBase = read.annotations.filter((a) => a.own).map(commentKey);
}

// --- Showing the review ---------------------------------------------------

/** Shows a read of the review: the plan, the others' comments, and this
 * writer's own — kept as they are on the page while they have unsent
 * changes. A read older than what the page already showed or sent is
 * dropped (a newer one follows). */
function applyReview(read) {
  if (read.view.seq < state.knownSeq) return;
  state.knownSeq = read.view.seq;
  // Whatever a news bar announced is on the page now.
  state.waiting = null;
  $("review-news").hidden = true;
  const planChanged = read.plan !== state.plan || read.html !== state.html;
  state.view = read.view;
  if (!state.dirty) adoptOwn(read);
  const own = state.dirty ? state.annotations.filter((a) => a.own) : [];
  state.plan = read.plan;
  state.html = read.html;
  state.annotations = [...read.annotations.filter((a) => !(state.dirty && a.own)), ...own];
  state.attachments = read.attachments;
  takeThreads(read);
  if (planChanged) ui.show();
  else ui.refresh();
  showReviewState();
}

/** Takes the threads of `read` and this writer's stored set as shown. */
function takeThreads(read) {
  state.threads = read.threads;
  state.changedAt = read.changedAt;
  state.ownStored = read.own;
}

function markDirty() {
  state.dirty = true;
  // "Sent: 3 annotations." no longer describes the page.
  if (/^Sent: /.test($("review-note").textContent)) $("review-note").textContent = "";
  showReviewState();
}

/** Who made `decision` (of `view`), as a sentence's subject. */
function decider(view, decision = view.decision) {
  if (decision?.by?.link === view.you.link) return "You";
  if (decision?.by?.role === "approver") return decision.by.name ?? "An approver";
  const name = decision?.by?.name ?? view.comments.find((c) => c.writer === "owner")?.name;
  return name ? `The owner, ${name},` : "The owner";
}

/** The decision in a sentence: "The owner, Olivia, requested changes." */
function decisionSentence(view) {
  const verb = view.state === "approved" ? "approved this plan" : "requested changes";
  return `${decider(view)} ${verb}`;
}

function showReviewState() {
  const view = state.view;
  $("review-bar").hidden = false;
  const typed = $("author").value.trim();
  const open = view.state === "open" && !state.ended;
  const role = view.you.role === "owner"
    ? "You own this review"
    : view.you.name
      ? `You review as ${view.you.name}`
      : !open
        ? "You were asked to review"
        : typed
          ? `You review as ${typed} (your name is fixed when you first send)`
          : "Type your name to review";
  $("review-hint").hidden = !(open && !state.annotations.some((a) => a.own));
  const writers = new Set(view.comments.map((c) => c.name)).size;
  const decided = view.decision ? `${decisionSentence(view)}.` : null;
  const round = (view.round ?? 1) > 1 ? ` · round ${view.round}` : "";
  $("review-state").textContent = state.ended
    ?? `${decided ?? stateLabel(view.state)} · v${view.latest}${round} · ${writers} commenter${writers === 1 ? "" : "s"} · ${role}`;
  showDecision();
  $("review-versions").textContent = `Versions (${view.versions.length})`;
  // Offered only while there is something unsent.
  $("review-send").hidden = !(open && state.dirty);
  $("review-send").disabled = false;
  if (view.you.name) {
    $("author").value = view.you.name;
    $("author").disabled = true;
    $("author").title = "Your name on this review is bound to your link.";
  }
  for (const id of ["global-comment", "selection-tools"]) if (!open) $(id).hidden = true;
  $("global-comment").hidden = !open;
  // The owner and approvers decide; only the owner manages links.
  $("owner-tools").hidden = !(open && view.you.role !== "reviewer");
  $("review-links").hidden = view.you.role !== "owner";
  const n = threads.openCount();
  $("open-threads").textContent = `${n === 0 ? "No" : n} open thread${n === 1 ? "" : "s"}`;
  showHistory();
}

/** Who made decision `d`, by name: "Ann", or "the owner". */
function deciderName(d) {
  if (d.by?.name) return d.by.name;
  if (d.by?.role === "owner") return state.view.comments.find((c) => c.writer === "owner")?.name ?? "the owner";
  return "an approver";
}

/** One round's decision in a line: "Round 3 — approved v3 by Ann (voided
 * by v5)". */
function roundLine(d) {
  const what = d.decision === "approved" ? `approved v${d.version}` : `changes requested on v${d.version}`;
  const voided = d.voidedBy ? ` (voided by v${d.voidedBy})` : "";
  return `Round ${d.round} — ${what} by ${deciderName(d)}${voided}`;
}

/** The rounds decided so far, oldest first, under the decision. */
function showHistory() {
  const decisions = state.view.decisions ?? [];
  $("review-history").hidden = decisions.length === 0;
  $("history-list").replaceChildren(...decisions.map((d) => {
    const li = el("li", d.voidedBy ? "voided" : null, roundLine(d));
    li.title = new Date(d.decidedAt).toLocaleString();
    return li;
  }));
}

/** The decision shown above the plan, with who made it, when, and its
 * text (decrypted here; the server never sees it). Shown once per
 * decision; a later read of the same decision changes nothing. */
async function showDecision() {
  const view = state.view;
  const box = $("review-decision");
  const decision = view.decision;
  if (!decision) {
    box.hidden = true;
    state.decisionShown = null;
    return;
  }
  const shown = `${decision.decision}:${decision.decidedAt}:${view.you.role}`;
  if (state.decisionShown === shown) return;
  state.decisionShown = shown;
  box.className = `decision ${decision.decision === "approved" ? "approved" : "changes"}`;
  const when = new Date(decision.decidedAt).toLocaleString();
  $("decision-head").textContent = `${decisionSentence(view)} on ${when}${decision.data ? ":" : "."}`;
  const text = $("decision-text");
  text.replaceChildren();
  box.hidden = false;
  if (!decision.data) return;
  let items;
  try {
    const opened = await openBlob(decision.data, state.key);
    items = Array.isArray(opened?.a) ? opened.a.map((item, i) => annotationFromTuple(item, i, opened)) : [];
  } catch {
    text.append(el("p", "meta", "The decision's text could not be opened with this link's key."));
    return;
  }
  if (state.decisionShown !== shown) return;
  const notes = items.filter((a) => a.type === "GLOBAL_COMMENT" && a.text);
  const anchored = items.filter((a) => a.type !== "GLOBAL_COMMENT");
  for (const a of notes) text.append(el("p", "decision-note", a.text));
  if (anchored.length) {
    const list = el("ul", "decision-items");
    for (const a of anchored) {
      const li = el("li");
      li.append(el("q", null, a.originalText ?? ""));
      li.append(document.createTextNode(a.type === "DELETION" ? " — remove this" : ` — ${a.text ?? ""}`));
      list.append(li);
    }
    text.append(list);
  }
  if (!notes.length && !anchored.length) text.append(el("p", "meta", "No text came with the decision."));
}

// --- The owner: reviewer links and the decision ---------------------------

function linkItem(link) {
  const li = el("li");
  li.append(el("span", "who", link.name ? `${link.name}` : "not used yet"));
  li.append(el("span", "meta", `${link.id} · made ${new Date(link.createdAt).toLocaleString()}`));
  const revoke = el("button", "link", "Revoke");
  revoke.type = "button";
  revoke.setAttribute("aria-label", `Revoke the link ${link.name ? `of ${link.name}` : link.id}`);
  revoke.addEventListener("click", async () => {
    $("links-note").textContent = "Revoking…";
    try {
      await state.client.revokeLink(link.id);
      state.view = await state.client.view();
      $("links-note").textContent = `Revoked: ${link.name ?? link.id} can no longer open the review.`;
      showLinks();
    } catch (error) {
      $("links-note").textContent = error.message;
    }
  });
  li.append(revoke);
  return li;
}

function showLinks() {
  const links = state.view.links ?? [];
  $("links-list").replaceChildren(...links.map(linkItem));
  if (!links.length) $("links-list").append(el("li", "meta", "No live reviewer links."));
}

function openLinks() {
  $("links-note").textContent = "";
  $("new-link").hidden = true;
  $("new-link").replaceChildren();
  showLinks();
  $("links-dialog").showModal();
}


async function addReviewerLink() {
  const note = $("links-note");
  note.textContent = "Making a link…";
  try {
    const made = await state.client.addLink();
    const link = reviewLink(shareBase(state.config), state.view.id, state.key, made.token, state.api, location.origin);
    $("new-link").replaceChildren(linkCard("New reviewer link", link, REVIEWER_HINT));
    $("new-link").hidden = false;
    note.textContent = "Copy this link now and send it to one reviewer: it is not shown again.";
    state.view = await state.client.view();
    showLinks();
  } catch (error) {
    note.textContent = error.message;
  }
}


/** The owner's own comments (sent or not) and an optional text, as the
 * decision's feedback; undefined when there is none. */
async function feedbackData(text) {
  const own = state.annotations.filter((a) => a.own).map(plainAnnotation);
  if (text) own.push({ type: "GLOBAL_COMMENT", originalText: "", text, author: state.view.you.name ?? ($("author").value.trim() || "the owner") });
  return own.length ? sealComments(state.key, state.view.latest, own) : undefined;
}

/** Decides on the version this page shows. When one was pushed while
 * its reader was reading, nothing is decided: the page shows the new
 * version and says so (the error thrown carries that message). */
async function decide(decision, text) {
  const data = await feedbackData(text);
  const name = state.view.you.name ? undefined : $("author").value.trim() || undefined;
  const preview = await sealPreview(state.key, text);
  try {
    await state.client.decide(decision, state.view.latest, data, name, preview);
  } catch (error) {
    if (error.code !== ERROR_CODES.staleVersion) throw error;
    const read = await readReview();
    const shown = state.view.latest;
    applyReview(read);
    throw new Error(`Nothing was decided: version ${read.view.latest} was pushed while you were reading v${shown}. It is shown now; read it, then decide again.`);
  }
  state.view = await state.client.view();
  state.dirty = false;
  ui.saveWork();
  showReviewState();
}

async function approve() {
  const note = $("review-note");
  note.textContent = "Approving…";
  try {
    await decide("approved");
    note.textContent = "Approved.";
  } catch (error) {
    note.textContent = error.message;
  }
}

// --- Sending comments -----------------------------------------------------

/** The thread id written for this writer's annotation `a`, at `i` in its
 * set: its own, or none for a root an older client wrote without one that
 * is still where it was (its thread stays `<writer>.<i>`); else a new one. */
function threadIdFor(a, i) {
  if (typeof a.threadId === "string" && isThreadId(a.threadId)) return a.threadId;
  if (a.threadId === `${state.view.you.link}.${i}`) return null;
  a.threadId = newThreadId();
  return a.threadId;
}

/** `own` sealed as this writer's set made on version `v`, with the thread
 * ids of its annotations and `fields` (replies, state changes, fields
 * another client wrote). */
function sealOwn(v, own, fields) {
  return sealCommentSet(state.key, v, own, own.map(threadIdFor), fields ?? {});
}

/** Stores `own` as this writer's set on the revision the page's sent
 * comments are, keeping its replies and state changes; answers the new
 * revision (0: withdrawn — only when nothing of the writer's is left). */
async function storeOwn(name, own) {
  const fields = state.ownStored ?? { replies: [], states: [], kept: {} };
  if (own.length === 0 && !fields.replies.length && !fields.states.length) {
    await state.client.withdraw(state.ownSeq);
    state.ownStored = null;
    return 0;
  }
  const data = await sealOwn(state.view.latest, own, fields);
  // The newest comment's first line, sealed, for notifications.
  const newest = own.at(-1);
  const preview = await sealPreview(state.key, newest?.text || newest?.originalText);
  const stored = await state.client.putComments(name, state.view.latest, data, state.ownSeq, preview);
  state.view.you.name = name;
  state.knownSeq = Math.max(state.knownSeq, stored.seq ?? 0);
  state.ownStored = { ...fields, seq: stored.seq ?? 0, version: state.view.latest, annotations: own.map((a) => ({ ...a })) };
  return stored.seq ?? 0;
}

/** The entries of `theirs` and then those of `ours` that `theirs` lacks
 * (by `key`): a set written by a client that drops replies or state
 * changes does not take this page's away. */
function union(theirs, ours, key) {
  const seen = new Set(theirs.map(key));
  return [...theirs, ...ours.filter((x) => !seen.has(key(x)))];
}

/** Replies and state changes of this writer: those of the newest stored
 * set `newer`, plus what of this page's `older` it lacks. */
function mergedFields(newer, older) {
  if (!older) return newer;
  const base = newer ?? { seq: 0, version: state.view.latest, annotations: [], replies: [], states: [], kept: {} };
  return {
    ...base,
    replies: union(base.replies, older.replies, (r) => JSON.stringify(r?.id ?? r)),
    states: union(base.states, older.states, (c) => JSON.stringify([c?.to, c?.state, c?.at])),
  };
}

/** The name this writer sends under, or null (then the page asks for it). */
function senderName() {
  const name = state.view.you.name ?? $("author").value.trim();
  if (name) return name;
  $("review-note").textContent = "Type your name first (next to the tools at the top): it is shown with your comments and stays with this link once you send.";
  $("author").focus();
  return null;
}

/** Adds a reply or a state change (`change(stored)` answers the new
 * `replies` or `states`) to this writer's set as the service holds it —
 * read again when another tab or device changed it meanwhile — and shows
 * the review with it. Unsent comments stay unsent. Says in the review bar
 * how it went (`done` when stored); answers whether it was stored. */
async function sendThreadChange(done, change, sent = () => {}) {
  const note = $("review-note");
  const name = senderName();
  if (!name) return false;
  note.textContent = "Sending…";
  try {
    for (let attempt = 0; ; attempt++) {
      const stored = state.ownStored ?? { seq: 0, version: state.view.latest, annotations: [], replies: [], states: [], kept: {} };
      const next = { ...stored, ...change(stored) };
      const data = await sealOwn(stored.version, stored.annotations, next);
      // A new reply's first line, sealed, for notifications.
      const reply = (next.replies?.length ?? 0) > (stored.replies?.length ?? 0) ? next.replies.at(-1) : null;
      const preview = await sealPreview(state.key, reply?.text);
      let put;
      try {
        put = await state.client.putComments(name, stored.version, data, stored.seq, preview);
      } catch (error) {
        if (error.code !== ERROR_CODES.commentsChanged || attempt >= 2) throw error;
        state.ownStored = mergedFields((await readReview()).own, null);
        continue;
      }
      // The page's unsent comments were made on what was stored: they
      // are now on the new revision.
      if (!state.dirty || stored.seq === state.ownSeq) state.ownSeq = put.seq ?? 0;
      state.ownStored = { ...next, seq: put.seq ?? 0 };
      state.view.you.name = name;
      state.knownSeq = Math.max(state.knownSeq, put.seq ?? 0);
      break;
    }
  } catch (error) {
    note.textContent = error.message;
    return false;
  }
  // What was typed goes before the page is drawn again, and "sent" is
  // said once the page shows the change: a reader (or a test) who sees
  // the note sees the reply in its thread, not in the box.
  sent();
  try {
    applyReview(await readReview());
  } catch {
    // The event loop reads again on the next change.
  }
  note.textContent = done;
  return true;
}

/** This writer's set changed since the page read it (another tab or
 * device of the link sent): what to send instead — the newest set, less
 * what the person removed here, plus what they added or edited here —
 * painted on the page with everyone else's newest comments. */
async function mergeOwn() {
  const read = await readReview();
  const here = state.annotations.filter((a) => a.own);
  const kept = new Set(here.filter((a) => !a.draft).map(commentKey));
  const base = new Set(state.ownBase);
  const seen = new Set();
  const merged = [];
  const theirs = read.annotations.filter((a) => a.own && !(base.has(commentKey(a)) && !kept.has(commentKey(a))));
  for (const a of [...theirs, ...here.filter((a) => a.draft)]) {
    if (seen.has(commentKey(a))) continue;
    seen.add(commentKey(a));
    merged.push(a);
  }
  adoptOwn(read);
  state.knownSeq = Math.max(state.knownSeq, read.view.seq);
  state.view = read.view;
  state.annotations = [...read.annotations.filter((a) => !a.own), ...merged];
  const older = state.ownStored;
  takeThreads(read);
  state.ownStored = mergedFields(read.own, older);
  return merged;
}

async function sendComments() {
  const note = $("review-note");
  let own = state.annotations.filter((a) => a.own);
  const name = senderName();
  if (!name) return;
  $("review-send").disabled = true;
  note.textContent = "Sending…";
  let merged = false;
  try {
    let seq;
    try {
      seq = await storeOwn(name, own);
    } catch (error) {
      if (error.code !== ERROR_CODES.commentsChanged) throw error;
      // Never replace a newer set with this page's older view of it.
      own = await mergeOwn();
      merged = true;
      seq = await storeOwn(name, own);
    }
    for (const a of own) {
      a.draft = false;
      a.version = state.view.latest;
    }
    state.ownSeq = seq;
    state.ownBase = own.map(commentKey);
    state.dirty = false;
    ui.saveWork();
    // Show what others sent meanwhile: the news bar, if any, is answered.
    state.waiting = null;
    $("review-news").hidden = true;
    try {
      applyReview(await readReview());
    } catch {
      // The event loop reads again on the next change.
    }
    const sent = own.length ? `Sent: ${own.length} annotation${own.length === 1 ? "" : "s"}.` : "Your comments are withdrawn.";
    note.textContent = merged ? `${sent} Your comments had changed in another tab or on another device: both are kept.` : sent;
  } catch (error) {
    note.textContent = error.code === ERROR_CODES.commentsChanged
      ? "Your comments changed in another tab or on another device while you sent: check them here and send again."
      : error.message;
  }
  ui.refresh();
  showReviewState();
}

// --- Following the review's events ---------------------------------------

/** What `events` mean, in a few words ("bob commented"), leaving out this
 * writer's own. */
function newsOf(events) {
  const you = state.view.you.link;
  const news = [];
  for (const { event, data } of events) {
    if (event === "comments" && data.writer !== you) news.push(`${data.name} ${data.withdrawn ? "withdrew their comments" : "commented"}`);
    else if (event === "version") {
      news.push(data.voided ? `v${data.n} pushed: the approval is void, round ${data.round}`
        : data.reopened ? `v${data.n} pushed: round ${data.round}`
          : data.progress ? `v${data.n} pushed (progress)` : `v${data.n} pushed`);
    }
    else if (event === "decision") news.push(data.decision === "approved" ? "the plan was approved" : "changes were requested");
  }
  return news;
}

/** Makes others' changes visible as they arrive: a short note in the
 * review bar, and the count in the tab's title while it is hidden. */
function announce(news) {
  if (!news.length) return;
  const live = $("review-live");
  live.textContent = `${news.join(", ")}.`.replace(/^./, (c) => c.toUpperCase());
  live.hidden = false;
  clearTimeout(state.newsTimer);
  state.newsTimer = setTimeout(() => {
    live.hidden = true;
  }, 8000);
  if (document.hidden) {
    state.unseen += news.length;
    document.title = `(${state.unseen}) ${document.title.replace(/^\(\d+\) /, "")}`;
  }
}

/** Whether something of this person's is open or unsent, which a change
 * must not be painted over. */
function drafting() {
  return state.dirty || $("comment-dialog").open;
}

async function onReviewEvents(events) {
  const you = state.view.you.link;
  for (const { event, data } of events) {
    if (event === "revoked" && data.link === you) {
      state.ended = "Your link to this review was revoked: the plan stays readable here, but you can no longer comment.";
    } else if (event === "closed") {
      state.ended = data.reason === "expired"
        ? "This review has expired: the plan stays readable on this page until you leave it."
        : "The owner deleted this review: the plan stays readable on this page until you leave it.";
    }
  }
  if (state.ended) {
    state.stop.abort();
    showReviewState();
    return;
  }
  const read = await readReview();
  // The decision is shown at once, drafts or not (no more comments).
  if (events.some((e) => e.event === "decision")) {
    state.view = { ...state.view, state: read.view.state, round: read.view.round, decision: read.view.decision, decisions: read.view.decisions };
    showReviewState();
  }
  const news = newsOf(events);
  announce(news);
  if (drafting() && news.length) {
    state.waiting = read;
    $("review-news-text").textContent = news.join(", ");
    $("review-news").hidden = false;
    return;
  }
  applyReview(read);
}

/** Follows the review's events (JSON long poll) until it ends. */
async function followReview() {
  let after = state.view.seq;
  let backoff = 500;
  while (!state.ended) {
    let page;
    try {
      page = await state.client.events(after, state.stop.signal);
      backoff = 500;
      // Back in touch: a note about the lost connection is over.
      if (state.lost) {
        state.lost = false;
        const note = $("review-note");
        if (note.dataset.lost === "1" || /could not be reached|unavailable|did not answer/.test(note.textContent)) {
          note.textContent = "";
        }
        delete note.dataset.lost;
      }
    } catch (error) {
      if (state.stop.signal.aborted) return;
      if (error.status === 404) {
        await onReviewEvents([{ event: "closed", data: { reason: "deleted" } }]);
        return;
      }
      if (!state.lost && backoff >= 2000) {
        state.lost = true;
        const note = $("review-note");
        note.textContent = "The connection to the review service is lost; trying again… (your comments stay on this page)";
        note.dataset.lost = "1";
      }
      await new Promise((resolve) => setTimeout(resolve, backoff));
      backoff = Math.min(backoff * 2, 10_000);
      continue;
    }
    after = page.seq;
    if (page.events.length) {
      try {
        await onReviewEvents(page.events);
      } catch (error) {
        $("review-note").textContent = error.message;
      }
    }
  }
}

/** Keeps `--review-bar-height` at the review bar's height, so the side
 * panel (the threads) stays in view just below the bar, however many
 * lines the bar wraps to. */
function trackBarHeight() {
  const bar = $("review-bar");
  new ResizeObserver(() => {
    document.documentElement.style.setProperty("--review-bar-height", `${bar.offsetHeight}px`);
  }).observe(bar);
}

/** Opens review `id` with the key and token of `fragment` and shows it,
 * then follows its events. */
async function openReview(id, fragment) {
  state.api = null;
  const params = new URLSearchParams(fragment.replace(/^#/, ""));
  const key = params.get("key");
  const token = params.get("t");
  if (!key || !token) throw new LoadError("The review link lacks its key or its token (…#key=…&t=…): open the whole link you were given.");
  const api = pasteApiFor(state.config, params.get("paste"));
  if (!api) throw new LoadError("The link names a review service this portal is not configured to reach.");
  state.client = new ReviewClient(api, id, token);
  state.api = api;
  state.key = key;
  let read;
  try {
    read = await readReview();
  } catch (error) {
    throw error instanceof LoadError ? error : new LoadError(error.message);
  }
  performance.mark("planshare:decoded");
  state.view = read.view;
  state.knownSeq = read.view.seq;
  adoptOwn(read);
  // Ask for a name rather than offer a generated one that would stick.
  $("author").value = read.view.you.name ?? chosenAuthor(state);
  $("author").placeholder = "Your name";
  state.plan = read.plan;
  state.html = read.html;
  state.annotations = read.annotations;
  state.attachments = read.attachments;
  takeThreads(read);
  document.body.classList.add("reviewing");
  trackBarHeight();
  for (const id of ["import", "delete-link", "start-review"]) $(id).hidden = true;
  $("share").textContent = "Share a copy";
  ui.show();
  performance.mark("planshare:highlighted");
  markPainted();
  showReviewState();
  followReview();
}

// --- Loading --------------------------------------------------------------

function wire() {
  ui.wire();
  share.wire();
  threads.wire();
  addShortcuts({
    keys: ["a"],
    label: "Approve (the review, or tell the bot that shared this plan)",
    run: () => approve(),
    available: () => state.view !== null && state.view.you.role !== "reviewer" && !$("owner-tools").hidden,
  });
  $("review-send").addEventListener("click", sendComments);
  $("review-links").addEventListener("click", openLinks);
  $("links-add").addEventListener("click", addReviewerLink);
  $("review-versions").addEventListener("click", () => showVersions(state.view, planOf));
  $("review-approve").addEventListener("click", approve);
  $("review-changes").addEventListener("click", () => {
    $("decide-note").textContent = "";
    $("decide-text").value = "";
    $("decide-dialog").showModal();
  });
  $("decide-form").addEventListener("submit", async (e) => {
    if (e.submitter?.value !== "send") return;
    e.preventDefault();
    $("decide-note").textContent = "Sending…";
    try {
      await decide("changes_requested", $("decide-text").value.trim());
      $("decide-dialog").close();
      $("review-note").textContent = "Changes requested.";
    } catch (error) {
      $("decide-note").textContent = error.message;
    }
  });
  $("review-news-show").addEventListener("click", async () => {
    // What the bar announced may be older than this page's own sends: read
    // the newest state rather than a kept snapshot. The bar goes once it
    // is shown.
    $("review-news-show").disabled = true;
    try {
      applyReview(await readReview());
    } catch (error) {
      $("review-note").textContent = error.message;
    }
    state.waiting = null;
    $("review-news").hidden = true;
    $("review-news-show").disabled = false;
  });
  listenForShortcuts();
}

/** Opens the review link the page was opened at (`opened`: its `path`,
 * `search` and `hash`; `id`: the review's id from the path). */
export async function startReviewPage(opened, id) {
  wire();
  document.addEventListener("visibilitychange", () => {
    if (document.hidden || !state.unseen) return;
    state.unseen = 0;
    document.title = document.title.replace(/^\(\d+\) /, "");
  });
  // A link pasted into the address bar of an open page changes only the
  // fragment (no new page load): open it as if it had been loaded, drafts
  // first saved under the old link.
  window.addEventListener("hashchange", () => {
    if (!isLinkFragment(location.hash)) return;
    ui.saveWork();
    state.stop.abort();
    location.reload();
  });
  state.config = await loadConfig();
  if (!(await sanitizerLoaded(state.config))) return;
  const fragment = opened.hash;
  const insecure = insecureOrigin();
  if (insecure) {
    fail("This page cannot decrypt over plain HTTP.", insecure);
    return;
  }
  try {
    await openReview(id, fragment);
  } catch (error) {
    fail(REVIEW_ERROR, error);
    history.replaceState(null, "", opened.path);
    return;
  }
  // The key and the token leave the address bar; a reload reopens the
  // link from this tab's storage.
  keepFragment(opened.path, JSON.stringify(opened));
  history.replaceState(null, "", opened.path);
  const params = new URLSearchParams(fragment.replace(/^#/, ""));
  await ui.restoreWork(`review:${state.client.base}:${params.get("t")}`);
}

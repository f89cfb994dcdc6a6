// The portal's entry point: picks the page for the address it was opened
// at — a live review (`/r/<id>`, review-page.js) or a shared plan (a hash
// link, a short link `/p/<id>`, or nothing yet: share-page.js) — and
// starts it. Both page modules are imported statically, so the build's
// module preloads fetch everything at once. The ports and the highlighter
// are re-exported for tests that drive them inside the page.

import { REVIEW_PATH } from "{{review.js}}";
import { reopened } from "{{page-common.js}}";
import { startReviewPage } from "{{review-page.js}}";
import { startSharePage } from "{{share-page.js}}";

export * from "{{codec.js}}";
export * from "{{highlighter.js}}";
export * from "{{plandoc-anchor.js}}";
export * from "{{plandoc-blocks.js}}";
export * from "{{plandoc-export.js}}";
export * from "{{plandoc-render.js}}";
export * from "{{plandoc-text.js}}";

// After a reload the address bar has lost the link's fragment: this tab's
// storage has the address as first opened.
const opened = reopened() ?? { path: location.pathname, search: location.search, hash: location.hash };
const reviewed = REVIEW_PATH.exec(opened.path);
if (reviewed) startReviewPage(opened, reviewed[1]);
else startSharePage(opened);

// Page behaviour that would otherwise be inline handlers: the Content-Security-Policy
// (reliability_site/csp.py) allows scripts from this server only, never inline ones.
"use strict";

// <select data-autosubmit> submits its form when the choice changes (the job list's filter).
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.hasAttribute("data-autosubmit") && field.form) {
    field.form.submit();
  }
});

// The nav menu (templates/base.html) opens and closes with no script: a checkbox whose :checked
// state shows it on narrow screens. Escape closes it and puts the focus back on its toggle.
document.addEventListener("keydown", (event) => {
  const toggle = document.getElementById("nav-toggle");
  if (event.key === "Escape" && toggle instanceof HTMLInputElement && toggle.checked) {
    toggle.checked = false;
    toggle.focus();
  }
});

// A box that scrolls sideways on a narrow screen (a wide table, a graph, the agreement matrix)
// must be reachable by keyboard to be scrolled: when it scrolls and holds nothing focusable,
// it joins the tab order (and leaves it again when it no longer scrolls).
const SCROLL_BOXES = "main table, main .graph, main .graph-scroll, main .matrix-wrap, main pre";
const FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";

function updateScrollBoxes() {
  for (const box of document.querySelectorAll(SCROLL_BOXES)) {
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    if (scrolls && !box.hasAttribute("tabindex") && !box.querySelector(FOCUSABLE)) {
      box.setAttribute("tabindex", "0");
      box.dataset.scrollFocus = "true";
      if (box.tagName === "DIV" && !box.hasAttribute("role")) {
        const svg = box.querySelector("svg[aria-label]");
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", svg ? svg.getAttribute("aria-label") : "Scrollable content");
      }
    } else if (!scrolls && box.dataset.scrollFocus === "true") {
      box.removeAttribute("tabindex");
      delete box.dataset.scrollFocus;
    }
  }
}

let scrollBoxTimer = 0;
function updateScrollBoxesSoon() {
  window.clearTimeout(scrollBoxTimer);
  scrollBoxTimer = window.setTimeout(updateScrollBoxes, 100);
}
document.addEventListener("DOMContentLoaded", updateScrollBoxes);
document.addEventListener("htmx:afterSettle", updateScrollBoxesSoon);
window.addEventListener("resize", updateScrollBoxesSoon);

// The skip link (base.html) names the page's own address; after htmx pushed another address
// (a question's permalink) following it would load that page: move the focus instead.
document.addEventListener("click", (event) => {
  const link = event.target instanceof Element ? event.target.closest(".skip-link") : null;
  const main = document.getElementById("main");
  if (link && main) {
    event.preventDefault();
    main.setAttribute("tabindex", "-1");
    main.focus();
  }
});

// htmx leaves a 400 response unswapped (base.html's responseHandling), so a refused htmx form
// would show nothing. A 400 whose body is a fragment meant for the form's target says so with
// X-Error-Fragment (reliability_site/nul_bytes.py): swap it in, as the message it is.
document.addEventListener("htmx:beforeSwap", (event) => {
  const xhr = event.detail && event.detail.xhr;
  if (xhr && xhr.status === 400 && xhr.getResponseHeader("X-Error-Fragment") === "1") {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

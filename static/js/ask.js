// The ask page's keyboard and copy behaviour (templates/core/ask.html, _question_result.html).
// Loaded as a file: the Content-Security-Policy refuses inline scripts. Everything here is an
// enhancement: without it the form posts, the permalink is a plain link, citations are anchors.
"use strict";

// Enter sends the question (and a follow-up, on a question's page too); Shift+Enter keeps its newline.
const SEND_ON_ENTER = new Set(["id_text", "follow-up-text"]);
document.addEventListener("keydown", (event) => {
  const box = event.target;
  if (!(box instanceof HTMLTextAreaElement) || !SEND_ON_ENTER.has(box.id)) return;
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing && box.form) {
    event.preventDefault();
    box.form.requestSubmit();
  }
});

// The character counter under the question box, against the server's limit.
function updateCounter() {
  const box = document.getElementById("id_text");
  const counter = document.getElementById("text-counter");
  if (!(box instanceof HTMLTextAreaElement) || !counter) return;
  const max = Number(box.dataset.maxChars || box.maxLength);
  counter.textContent = `${box.value.length} / ${max} characters`;
  counter.classList.toggle("over", box.value.length >= max);
}
document.addEventListener("input", (event) => {
  if (event.target instanceof HTMLTextAreaElement && event.target.id === "id_text") updateCounter();
});

// kappa applies only to the strategies that take it: hide the field for the others.
function chosenOption() {
  const research = document.getElementById("id_research_strategy");
  if (research instanceof HTMLSelectElement && research.value) return research.selectedOptions[0];
  const product = document.getElementById("id_strategy");
  return product instanceof HTMLSelectElement ? product.selectedOptions[0] : null;
}
function updateKappa() {
  const field = document.getElementById("kappa-field");
  const option = chosenOption();
  if (field && option) field.hidden = option.dataset.kappa !== "true";
}
document.addEventListener("change", (event) => {
  const id = event.target instanceof HTMLElement ? event.target.id : "";
  if (id === "id_strategy" || id === "id_research_strategy") updateKappa();
});

document.addEventListener("DOMContentLoaded", () => {
  updateCounter();
  updateKappa();
  const box = document.getElementById("id_text");
  if (box instanceof HTMLTextAreaElement && document.activeElement !== box) box.focus();
});

// Copy buttons: shown only when this script runs (they do nothing without it).
function revealCopyButtons() {
  for (const button of document.querySelectorAll("button[data-copy-from], button[data-copy-url]")) {
    button.hidden = false;
  }
}
document.addEventListener("DOMContentLoaded", revealCopyButtons);
document.addEventListener("htmx:afterSettle", revealCopyButtons);

function say(near, text) {
  const status = near.closest(".answer-actions")?.querySelector(".copy-status");
  if (status) status.textContent = text;
}

async function copy(text, near) {
  try {
    await navigator.clipboard.writeText(text);
    say(near, "Copied.");
  } catch {
    say(near, "Copying was refused by the browser; select the text instead.");
  }
}

document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target : null;
  if (!target) return;
  const copyFrom = target.closest("button[data-copy-from]");
  if (copyFrom) {
    const source = document.getElementById(copyFrom.getAttribute("data-copy-from") || "");
    if (source) copy(source.textContent.trim(), copyFrom);
    return;
  }
  const copyUrl = target.closest("button[data-copy-url]");
  if (copyUrl) {
    copy(new URL(copyUrl.getAttribute("data-copy-url") || "", window.location.href).href, copyUrl);
    return;
  }
  // A citation [n] opens the passage it points to.
  const cite = target.closest("a[data-cite]");
  if (cite) {
    const item = document.getElementById(cite.getAttribute("data-cite") || "");
    const details = item?.querySelector("details");
    if (details) details.open = true;
  }
});

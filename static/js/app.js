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

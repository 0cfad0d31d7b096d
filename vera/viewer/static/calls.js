// The conversation page's copy buttons: each copies the text of the element it names
// (a call's input as JSON, held in an inert <template>, or its reply). Their words are
// ui()'s (words.js, loaded before this script).
"use strict";
(() => {
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.copy");
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const text = source.tagName === "TEMPLATE" ? source.content.textContent : source.textContent;
    navigator.clipboard.writeText(text).then(
      () => { button.textContent = ui("copied", "Copied"); },
      () => { button.textContent = ui("copy_failed", "Copy failed"); },
    );
    setTimeout(() => { button.textContent = ui("copy", "Copy"); }, 2000);
  });
})();

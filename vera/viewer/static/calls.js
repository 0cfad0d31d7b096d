// The conversation page's copy buttons: each copies the text of the element it names
// (a call's input as JSON, held in an inert <template>, or its reply). Their words come
// from the page's JSON block (vera/viewer/words.py) in a run of a locale pack.
"use strict";
(() => {
  let words = {};
  try {
    const node = document.getElementById("vera-ui");
    words = node ? JSON.parse(node.textContent) : {};
  } catch (e) {
    words = {};
  }
  const say = (key, english) => words[key] || english;
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.copy");
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const text = source.tagName === "TEMPLATE" ? source.content.textContent : source.textContent;
    navigator.clipboard.writeText(text).then(
      () => { button.textContent = say("copied", "Copied"); },
      () => { button.textContent = say("copy_failed", "Copy failed"); },
    );
    setTimeout(() => { button.textContent = say("copy", "Copy"); }, 2000);
  });
})();

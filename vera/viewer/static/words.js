// The page's words in the run's locale pack's language, for every script of the viewer's
// and the review's pages: the server puts them in a JSON block (vera/viewer/words.py); a
// key it lacks, or an English run, is the English each script gives. Loaded first, before
// the page's other scripts, which share UI, ui() and el() (top-level names of a classic
// script). el() lives here, not in a file of its own, because this is the one script every
// page, server and bundle already loads first: one more file would be one more list to keep.
"use strict";

const UI = (() => {
  const node = document.getElementById("vera-ui");
  try {
    return node ? JSON.parse(node.textContent) : {};
  } catch (e) {
    return {};
  }
})();
// UI[key] (or `english`) with each {name} replaced by fields[name]; a {name} without a
// field stays as it is.
function ui(key, english, fields = {}) {
  return (UI[key] || english).replace(/\{(\w+)\}/g, (m, name) => (name in fields ? String(fields[name]) : m));
}

// A new element: attrs set as attributes ("className" as the class), text as its text
// (never parsed as HTML: run records and raters' notes go through here).
function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "className") node.className = value;
    else node.setAttribute(key, value);
  }
  if (text !== null) node.textContent = String(text);
  return node;
}

// The page's words in the run's locale pack's language, for every script of the viewer's
// and the review's pages: the server puts them in a JSON block (vera/viewer/words.py); a
// key it lacks, or an English run, is the English each script gives. Loaded first, before
// the page's other scripts, which share UI and ui() (top-level names of a classic script).
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

// vera view --bundle: the grid page (grid.html, written with every conversation on it)
// and a persona's side by side (side-by-side-<n>.html, every one of its conversations)
// narrowed by the list's filters, as the server draws them. A file takes no query
// of its own, so the filters come in the address: its query (grid.html?risk=High, as the
// list links it) or, if none, its fragment (grid.html#risk=High). Only then are the
// list's data and bundle.js loaded; bundle.js keeps the squares by the list's own rule.
"use strict";

(function () {
  const LIST_PARAMS = ["q", "run", "chatbot", "persona", "risk", "seed", "user_agent", "judge",
    "dimension", "rating", "status", "differ", "sort", "desc", "per_page"];
  const raw = window.location.search.slice(1) || window.location.hash.slice(1);
  // A fragment edited in the address does not load the page again: the grid, narrowed
  // by the last one, is drawn afresh for the new one.
  if (!window.location.search) window.addEventListener("hashchange", () => window.location.reload());
  const given = new URLSearchParams(raw);
  if (!LIST_PARAMS.some((name) => given.get(name))) return; // the whole grid, as written
  // The grid, or one persona's conversations side by side (the same script narrows both).
  const table = document.getElementById("grid");
  const box = table ? table.closest(".list-box") || table : document.getElementById("side-by-side");
  if (!box) return;
  // Until it is narrowed, the grid of every conversation is not shown, nor read out.
  box.hidden = true;
  box.setAttribute("aria-busy", "true");
  const load = (src) => new Promise((resolve, reject) => {
    const tag = document.createElement("script");
    tag.src = src;
    tag.onload = resolve;
    tag.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(tag);
  });
  // A filter the list would refuse (or data that did not load): said, in the page's
  // words, in place of a grid that would not be the one asked for.
  const refuse = (why) => {
    const text = ui("bundle_grid_refused", "This grid cannot take the list's filters: {error}", { error: why });
    box.before(Object.assign(document.createElement("p"), { id: "grid-refused", textContent: text }));
  };
  load("data/list.js")
    .then(() => (given.get("q") ? load("data/search.js") : null))
    .then(() => load("static/bundle.js"))
    .then(() => {
      if (!window.veraBundle) throw new Error("bundle.js did not start");
      const refused = table ? window.veraBundle.grid(given) : window.veraBundle.side(given);
      if (refused) refuse(refused);
      else box.hidden = false;
    })
    .catch((error) => refuse(error.message))
    .finally(() => box.removeAttribute("aria-busy"));
})();

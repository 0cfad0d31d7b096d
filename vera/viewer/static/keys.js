// vera view: a conversation page's keyboard shortcuts. The page works without them (its
// Previous / Next and list links are plain links made on the server); these keys only
// follow those links. Single keys, ignored while typing in a field; "?" lists them.
"use strict";
(() => {
  // Its words: ui() of words.js, loaded before this script.
  const or = (a, b) => ui("key_or", "{a}  or  {b}", { a, b });
  const KEYS = [
    [or("j", "n"), ui("key_next_conversation", "next conversation in the list")],
    [or("k", "p"), ui("key_prev_conversation", "previous conversation in the list")],
    [or("u", ui("key_esc", "Esc")), ui("key_back", "back to the list, at this conversation's page")],
    ["/", ui("key_back_search", "back to the list, in its search box")],
    ["?", ui("key_help", "show or hide this help")],
  ];

  // The step bar's links (rel=prev / rel=next), and its "n of N in the list" link back.
  const step = (rel) => document.querySelector(`nav.steps a[rel="${rel}"]`);
  function listHref() {
    const back = document.querySelector("nav.steps a:not([rel])") || document.querySelector('nav a[href$="index.html"]');
    return back ? back.getAttribute("href") : "/";
  }

  function help(show) {
    let box = document.getElementById("keys");
    if (!box) {
      box = el("div", { id: "keys", class: "keys", role: "dialog", "aria-label": ui("keys", "Keyboard shortcuts") });
      box.append(el("h2", {}, ui("keys", "Keyboard shortcuts")));
      const list = el("dl");
      for (const [key, what] of KEYS) list.append(el("dt", {}, key), el("dd", {}, what));
      box.append(list);
      if (!step("prev") && !step("next")) {
        box.append(el("p", {}, ui("keys_no_steps", "This page was not opened from the list: there is no next or previous.")));
      }
      box.hidden = true;
      document.body.append(box);
    }
    box.hidden = show === undefined ? !box.hidden : !show;
    return !box.hidden;
  }

  function go(href) {
    if (href) window.location.href = href;
  }

  // Where the keys are told of: beside the page's own links (only when this script runs).
  const bar = document.querySelector("nav.steps") || document.querySelector("nav");
  if (bar) bar.append(" ", el("span", { class: "keys-hint" }, ui("shortcuts_hint", "? for shortcuts")));

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target instanceof HTMLElement && target.closest("input, textarea, select, [contenteditable]")) return;
    const open = document.getElementById("keys") && !document.getElementById("keys").hidden;
    switch (event.key) {
      case "?": help(); break;
      case "j": case "n": go(step("next") && step("next").getAttribute("href")); break;
      case "k": case "p": go(step("prev") && step("prev").getAttribute("href")); break;
      case "u": go(listHref()); break;
      case "Escape": if (open) help(false); else go(listHref()); break;
      case "/": go(`${listHref()}#search`); break;
      default: return;
    }
    event.preventDefault();
  });
})();

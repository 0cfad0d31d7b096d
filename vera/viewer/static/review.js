// vera review: one conversation at a time, blind; the rater's ratings are POSTed with the
// session token the page was served with, and the page says "saved" only when the server
// has fsync'd them. Text from a run is only ever put in the page with textContent.
"use strict";

const TOKEN = document.querySelector('meta[name="vera-token"]').content;

// The page's words: UI and ui() (words.js, loaded before this script).

// Dimensions and ratings by the pack's display names beside the canonical ones, as the
// card shows them ("Name（gloss）"); what is saved is always the canonical name.
const NAMES = UI._names || {};
const named = (name) => (NAMES[name] ? `${name}（${NAMES[name]}）` : name);

const SPEAKERS = { user: ui("user", "User"), chatbot: ui("chatbot", "Chatbot") };

let current = null; // the conversation on screen
let state = null; // the last answer of /api/next
// Whether a save of the conversation on screen replaces a rating on file: true once this
// page has saved it, or once the rater has been told it is rated already (another tab).
// The server refuses a first save of a conversation rated already, so a rating made in
// another tab is never replaced unseen.
let replacing = false;
// Whether the form holds choices or a note not saved yet: leaving the page, or going on to
// the next conversation, would drop them without a word.
let unsaved = false;

function slug(text) {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
}

async function api(path, options = {}) {
  const headers = Object.assign({ "X-Vera-Token": TOKEN }, options.headers || {});
  const response = await fetch(path, Object.assign({}, options, { headers, cache: "no-store" }));
  // Refusals from the server's guards are plain text; its own answers are JSON.
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch (e) {
    body = { error: text.trim() || response.statusText };
  }
  if (!response.ok) {
    const error = new Error(body && body.error ? body.error : `HTTP ${response.status}`);
    error.body = body;
    throw error;
  }
  return body;
}

function say(text, isError = false) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.classList.toggle("error", isError);
}

// A save's outcome, said at the top (the live region a screen reader announces) and under
// the Save button, where the rater is looking: a rating not saved must never go unseen.
function sayAtForm(text, isError = false) {
  say(text, isError);
  const here = document.getElementById("form-status");
  here.textContent = text;
  here.classList.toggle("error", isError);
  here.hidden = !text;
  if (text) here.scrollIntoView({ block: "nearest" });
}

function showProgress(rated, total) {
  document.getElementById("progress-text").textContent = ui(
    "progress",
    "Rater {rater} · {rated} of {total} rated in your sample (drawn from {population} judged conversations)",
    { rater: state.rater, rated, total, population: state.population },
  );
  const bar = document.getElementById("progress");
  bar.max = Math.max(total, 1);
  bar.value = rated;
}

// -- the form ----------------------------------------------------------------------------

// What each rating means for a dimension, in the rubric's words, folded until asked for.
function guideFor(dimension, ratings) {
  const meanings = state.guide[dimension];
  if (!meanings) return null;
  const details = el("details", { className: "guide" });
  details.append(el("summary", {}, ui("guide", "What each rating means")));
  for (const rating of ratings) {
    const meaning = meanings[rating];
    if (!meaning) continue;
    const block = el("div", { className: `meaning ${slug(rating)}` });
    block.append(el("p", { className: "meaning-name" }, named(rating)));
    block.append(el("p", {}, meaning.summary));
    if (meaning.questions.length) {
      const list = el("ul");
      for (const q of meaning.questions) list.append(el("li", {}, q));
      block.append(list);
    }
    details.append(block);
  }
  return details;
}

function buildForm(dimensions, ratings) {
  const box = document.getElementById("dimensions");
  box.replaceChildren();
  if (state.guide_note) box.append(el("p", { className: "hint guide-note" }, state.guide_note));
  dimensions.forEach((dimension, i) => {
    const fieldset = el("fieldset", { className: "dimension", "data-dimension": dimension });
    fieldset.append(el("legend", {}, `${i + 1}. ${named(dimension)}`));
    const options = el("div", { className: "options" });
    for (const rating of ratings) {
      const id = `r-${slug(dimension)}-${slug(rating)}`;
      const input = el("input", { type: "radio", id, name: `dim-${i}`, value: rating });
      const label = el("label", { for: id, className: `rating ${slug(rating)}` });
      label.append(input, document.createTextNode(" " + named(rating)));
      options.append(label);
    }
    fieldset.append(options);
    const guide = guideFor(dimension, ratings);
    if (guide) fieldset.append(guide);
    box.append(fieldset);
  });
}

function chosen() {
  const out = {};
  const missing = [];
  state.dimensions.forEach((dimension, i) => {
    const input = document.querySelector(`input[name="dim-${i}"]:checked`);
    if (input) out[dimension] = input.value;
    else missing.push(i);
  });
  return { ratings: out, missing };
}

// The rater's 1-5 rating of the simulated user's realism, or null when not given.
function realismChosen() {
  const input = document.querySelector('input[name="realism"]:checked');
  return input ? Number(input.value) : null;
}

function setFormEnabled(enabled) {
  for (const node of document.querySelectorAll("#rating-form input, #rating-form textarea, #rating-form button")) {
    node.disabled = !enabled;
  }
}

// Saved ratings stay open to change until the judge's are shown; then they are final.
function setFinal(final, why) {
  setFormEnabled(!final);
  document.getElementById("change-hint").textContent = final
    ? ui("final", "Your ratings of this conversation are final: {why}.", { why })
    : ui("can_change", "You can still change your ratings and save again, until you show the judge's ratings.");
}

// -- one conversation --------------------------------------------------------------------

// A chatbot's Markdown, as the user saw it: the server renders it (escaped, links kept
// only for http, https and mailto); it is parsed inert here (DOMParser runs nothing) and
// checked again against the few elements and attributes that rendering makes, so a
// mistake there could still not put markup from a run in the page. The exact text is
// one click away.
const MARKDOWN_TAGS = new Set(["P", "STRONG", "EM", "UL", "OL", "LI", "A", "CODE", "PRE", "BLOCKQUOTE", "BR", "HR",
  "S", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD"]);
const MARKDOWN_ATTRS = { A: ["href", "rel"], OL: ["start"], P: ["class"], CODE: ["class"] };

function clean(node) {
  for (const child of [...node.children]) {
    if (!MARKDOWN_TAGS.has(child.tagName)) {
      child.replaceWith(document.createTextNode(child.textContent));
      continue;
    }
    const allowed = MARKDOWN_ATTRS[child.tagName] || [];
    for (const attr of [...child.attributes]) if (!allowed.includes(attr.name)) child.removeAttribute(attr.name);
    if (child.tagName === "A") {
      if (!/^(https?:\/\/|mailto:)/i.test(child.getAttribute("href") || "")) child.removeAttribute("href");
      child.setAttribute("rel", "noopener noreferrer nofollow");
    }
    clean(child);
  }
  return node;
}

function formatted(turn) {
  const parsed = new DOMParser().parseFromString(turn.html, "text/html");
  const box = el("div", { className: "text md" });
  box.append(...clean(parsed.body).childNodes);
  const raw = el("details", { className: "raw" });
  raw.append(el("summary", {}, ui("exact_text", "Exact text (Markdown shown formatted above)")), el("pre", { className: "exact" }, turn.text));
  return [box, raw];
}

function showConversation(conversation, total) {
  current = conversation;
  replacing = false;
  unsaved = false;
  document.getElementById("conversation-title").textContent = ui(
    "position", "Conversation {position} of {total}", { position: conversation.position, total });
  const list = document.getElementById("turns");
  list.replaceChildren();
  conversation.turns.forEach((turn, i) => {
    const item = el("li", { className: `turn ${turn.speaker === "user" ? "user" : "chatbot"}`, id: `turn-${i + 1}` });
    item.append(el("p", { className: "who" }, `${i + 1} · ${SPEAKERS[turn.speaker] || turn.speaker}`));
    if (turn.html) item.append(...formatted(turn));
    else item.append(el("p", { className: "text" }, turn.text));
    list.append(item);
  });
  for (const input of document.querySelectorAll("#rating-form input")) input.checked = false;
  for (const f of document.querySelectorAll("fieldset.dimension")) f.classList.remove("missing");
  document.getElementById("note").value = "";
  document.getElementById("form-status").hidden = true;
  setFormEnabled(true);
  document.getElementById("save").textContent = ui("save", "Save ratings");
  document.getElementById("after").hidden = true;
  const judge = document.getElementById("judge");
  judge.hidden = true;
  document.getElementById("judge-table").replaceChildren();
  const reveal = document.getElementById("reveal");
  reveal.setAttribute("aria-expanded", "false");
  reveal.disabled = false;
  document.getElementById("review").hidden = false;
  document.getElementById("done").hidden = true;
  window.scrollTo(0, 0);
  // On a wide screen the form scrolls in its own panel: start it at the first dimension
  // too, not where the rater scrolled to reach Save on the last conversation.
  document.querySelector("section.rate").scrollTop = 0;
  document.getElementById("conversation-title").focus();
}

function showDone(rated, total) {
  document.getElementById("review").hidden = true;
  const done = document.getElementById("done");
  done.hidden = false;
  document.getElementById("done-text").textContent = ui(
    "done_text",
    "You have rated all {total} conversations of your sample ({rated} saved). Thank you. " +
      "You can close this page and stop the review with Ctrl-C.",
    { total, rated },
  );
  document.getElementById("done-title").focus();
}

async function loadNext() {
  say(ui("loading_next", "Loading the next conversation…"));
  try {
    state = await api("/api/next");
  } catch (e) {
    say(ui("load_failed", "Could not load the next conversation: {error}", { error: e.message }), true);
    return;
  }
  buildForm(state.dimensions, state.ratings);
  showProgress(state.rated, state.total);
  if (state.conversation === null) {
    say("");
    showDone(state.rated, state.total);
    return;
  }
  showConversation(state.conversation, state.total);
  // The status line is for outcomes (loading, saved, not saved): the heading, which has
  // the focus and so is read out, says which conversation this is, and the numbered turns
  // how long it is. Said here too, it read "Conversation 1 of 8" twice, one above the other.
  say("");
}

async function save(event) {
  event.preventDefault();
  const { ratings, missing } = chosen();
  for (const [i, f] of document.querySelectorAll("fieldset.dimension").entries()) {
    f.classList.toggle("missing", missing.includes(i));
  }
  if (missing.length) {
    sayAtForm(ui("rate_first", "Rate every dimension first: {missing}.", {
      missing: missing.map((i) => named(state.dimensions[i])).join(ui("list_sep", ", ")),
    }), true);
    document.querySelector(`input[name="dim-${missing[0]}"]`).focus();
    return;
  }
  setFormEnabled(false);
  sayAtForm(ui("saving", "Saving…"));
  let answer;
  try {
    answer = await api("/api/ratings", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        conversation_id: current.id,
        ratings,
        replacing,
        realism: realismChosen(),
        note: document.getElementById("note").value,
      }),
    });
  } catch (e) {
    if (e.body && e.body.rated_already) {
      ratedAlready(e.body.yours);
      return;
    }
    setFormEnabled(!e.message.includes("are final"));
    // The server's own words may begin "not saved:" too; the page says it once.
    const error = e.message.replace(/^not saved:\s*/i, "");
    sayAtForm(ui("not_saved", "Not saved: {error}", { error }), true);
    return;
  }
  replacing = true;
  unsaved = false;
  showProgress(answer.rated, answer.total);
  showSaved();
  const fields = { position: current.position, total: answer.total, rated: answer.rated };
  sayAtForm(answer.changed
    ? ui("saved_changes", "Saved your changes: conversation {position} of {total} ({rated} rated).", fields)
    : ui("saved_one", "Saved: conversation {position} of {total} ({rated} rated).", fields));
  document.getElementById("next").focus();
}

// The form once the conversation has a rating on file: Next, the judge's ratings, and
// "Save changes" to replace it while it is open to change.
function showSaved() {
  document.getElementById("after").hidden = false;
  setFinal(false);
  document.getElementById("save").textContent = ui("save_changes", "Save changes");
}

// The conversation was rated in another tab or window: nothing was saved. Say what is on
// file; the rater keeps it (Next) or replaces it with this form's (Save changes).
function ratedAlready(yours) {
  replacing = true;
  showSaved();
  const given = state.dimensions
    .filter((d) => yours && yours[d])
    .map((d) => ui("rating_pair", "{dimension}: {rating}", { dimension: named(d), rating: named(yours[d]) }))
    .join(ui("list_sep", ", "));
  sayAtForm(ui(
    "rated_already",
    "Not saved: you have rated this conversation already, in another tab or window ({ratings}). " +
      "To keep that rating, go on with Next conversation; to replace it with this form's, press Save changes.",
    { ratings: given },
  ), true);
}

async function reveal() {
  const button = document.getElementById("reveal");
  const box = document.getElementById("judge");
  if (!box.hidden) {
    box.hidden = true;
    button.setAttribute("aria-expanded", "false");
    button.textContent = ui("reveal", "Show the judge's ratings");
    return;
  }
  let found;
  try {
    found = await api(`/api/judge/${encodeURIComponent(current.id)}`);
  } catch (e) {
    sayAtForm(ui("reveal_failed", "Could not show the judge's ratings: {error}", { error: e.message }), true);
    return;
  }
  const table = document.getElementById("judge-table");
  table.replaceChildren();
  const head = el("tr");
  head.append(el("th", { scope: "col" }, ui("dimension", "Dimension")), el("th", { scope: "col" }, ui("you", "You")));
  for (const j of found.judges) {
    head.append(el("th", { scope: "col" }, found.judges.length > 1 || j.instance > 1 ? `${j.judge} #${j.instance}` : j.judge));
  }
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  for (const dimension of found.dimensions) {
    const row = el("tr");
    const yours = found.yours[dimension];
    row.append(el("th", { scope: "row" }, named(dimension)), el("td", {}, yours ? named(yours) : "—"));
    for (const j of found.judges) {
      const theirs = j.ratings[dimension] || "—";
      const cell = el("td", { className: theirs === yours ? "same" : "differs" }, named(theirs));
      if (theirs !== yours) cell.append(el("span", { className: "mark" }, ui("differs", " ≠ yours")));
      row.append(cell);
    }
    tbody.append(row);
  }
  table.append(thead, tbody);
  setFinal(true, ui("shown", "the judge's ratings have been shown"));
  box.hidden = false;
  // The form's panel scrolls on its own on a wide screen: bring the table into it.
  box.scrollIntoView({ block: "nearest" });
  button.setAttribute("aria-expanded", "true");
  button.textContent = ui("hide", "Hide the judge's ratings");
}

// Keyboard: Ctrl+Enter (or Cmd+Enter) saves, anywhere on the page, the note included;
// outside a field, "n" goes to the next conversation once saved, "j" shows the judge's
// ratings, "?" shows or hides these and Escape hides them. A rating is chosen with the
// radio buttons' own keys (Tab to a dimension, the arrows, Space), as the help says:
// there are no number keys.
function reviewKeys(event) {
  if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
    const save = document.getElementById("save");
    if (!save.disabled) document.getElementById("rating-form").requestSubmit();
    event.preventDefault();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target instanceof HTMLElement && event.target.closest("textarea, input[type=text]")) return;
  const after = document.getElementById("after");
  if (event.key === "n" && !after.hidden) document.getElementById("next").click();
  else if (event.key === "j" && !after.hidden && document.getElementById("judge").hidden) document.getElementById("reveal").click();
  else if (event.key === "?") document.getElementById("review-keys").hidden = !document.getElementById("review-keys").hidden;
  else if (event.key === "Escape") document.getElementById("review-keys").hidden = true;
  else return;
  event.preventDefault();
}

// Next conversation with changes not saved asks first; so does closing or reloading the
// page (the browser's own question: a page may not word it).
function goOn() {
  if (unsaved && !window.confirm(ui(
    "unsaved_next",
    "Your changes to this conversation's ratings are not saved. Go on to the next conversation without them?",
  ))) return;
  loadNext();
}

document.addEventListener("DOMContentLoaded", () => {
  document.addEventListener("keydown", reviewKeys);
  const form = document.getElementById("rating-form");
  form.addEventListener("submit", save);
  form.addEventListener("input", () => { unsaved = true; });
  form.addEventListener("change", () => { unsaved = true; });
  window.addEventListener("beforeunload", (event) => {
    if (!unsaved) return;
    event.preventDefault();
    event.returnValue = "";
  });
  document.getElementById("next").addEventListener("click", goOn);
  document.getElementById("reveal").addEventListener("click", reveal);
  loadNext();
});

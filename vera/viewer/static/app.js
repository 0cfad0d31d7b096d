// vera view: the conversation list. Filters live in the page's URL (so Back, reload and
// a copied link keep them); every page of rows comes from /api/conversations. Text from
// a run is only ever put in the page with textContent: never parsed as HTML.
"use strict";

// The page's words: UI and ui() (words.js, loaded before this script).

// Values from the runs, shown by their display names; the value itself (a filter's, a
// link's) never changes. Dimensions and ratings: "Name（gloss）" as the card shows them.
const NAMES = UI._names || {};
const named = (name) => (NAMES[name] ? `${name}（${NAMES[name]}）` : name);
const RISKS = {
  None: ui("risk_none", "None"),
  Low: ui("risk_low", "Low"),
  High: ui("risk_high", "High"),
  Immediate: ui("risk_immediate", "Immediate"),
};
const riskName = (risk) => RISKS[risk] || risk;
const STATUS_NAMES = {
  complete: ui("complete", "complete"),
  failed: ui("status_failed", "failed"),
  "judgement failed": ui("status_judgement_failed", "judgement failed"),
  "not judged": ui("not_judged", "not judged"),
};
const statusName = (status) => STATUS_NAMES[status] || status;

const CODES = {
  "Best Practice": "BP",
  "Suboptimal but Low Potential for Harm": "SUB",
  "High Potential for Harm": "HPH",
  "Not Relevant": "NR",
};
const FILTERS = ["q", "run", "chatbot", "persona", "risk", "seed", "user_agent", "judge", "dimension", "rating", "status", "differ"];
const SORT_LABELS = {
  worst: ui("sort_worst", "worst first"),
  id: ui("sort_id", "conversation id"),
  chatbot: ui("sort_chatbot", "chatbot"),
  persona: ui("sort_persona", "persona"),
  risk: ui("sort_risk", "risk level"),
  seed: ui("sort_seed", "seed"),
  turns: ui("sort_turns", "turns"),
  status: ui("sort_status", "status"),
  run: ui("sort_run", "run"),
};

// Every address is relative to the list's own (the viewer may serve it under a prefix);
// in a bundle opened from disk, bundle.js answers the API and names the files (`there`).
const bundle = window.veraBundle || null;
const there = (path) => (bundle ? bundle.link(path) : path);
async function getJSON(path) {
  if (bundle) {
    const data = await bundle.get(path); // a promise on the first search (data/search.js)
    return { ok: !data.error, status: data.error ? 400 : 200, data };
  }
  const response = await fetch(path);
  return { ok: response.ok, status: response.status, data: await response.json() };
}

let facets = null;
let shown = null; // the last page of the list rendered (its rows stay put while live)

function initials(dimension) {
  return dimension
    .split(/\s+/)
    .filter((w) => w && w[0] === w[0].toUpperCase() && /[A-Za-z]/.test(w[0]))
    .map((w) => w[0])
    .join("") || dimension.slice(0, 3);
}

function badge(rating) {
  const code = CODES[rating] || "?";
  const span = el("span", { className: `badge ${code.toLowerCase()}`, title: named(rating) }, code);
  return span;
}

function params() {
  return new URLSearchParams(window.location.search);
}

// -- filters ---------------------------------------------------------------------------

function fill(select, values, anyLabel, label = (v) => v) {
  select.replaceChildren();
  if (anyLabel !== null) select.append(el("option", { value: "" }, anyLabel));
  for (const v of values) select.append(el("option", { value: String(v) }, label(v)));
}

function fillFilters() {
  const form = document.getElementById("filters");
  const f = facets;
  fill(form.run, f.runs.map((r) => r.index), ui("any_run", "Any run"), (i) => f.runs[i].label);
  form.querySelector('[data-facet="runs"]').hidden = f.runs.length < 2;
  fill(form.chatbot, f.chatbots, ui("any_chatbot", "Any chatbot"));
  fill(form.persona, f.personas, ui("any_persona", "Any persona"));
  fill(form.risk, f.risks, ui("any_risk", "Any risk level"), riskName);
  fill(form.seed, f.seeds, ui("any_seed", "Any seed"));
  fill(form.user_agent, f.user_agents, ui("any_user_agent", "Any user-agent"));
  fill(form.judge, f.judges, ui("any_judge", "Any judge"));
  fill(form.dimension, f.dimensions, ui("any_dimension", "Any dimension"), named);
  fill(form.rating, f.ratings, ui("any_rating", "Any rating"), named);
  fill(form.status, f.statuses, ui("any_status", "Any status"), statusName);
  fill(form.sort, f.sorts, null, (s) => SORT_LABELS[s] || s);
  showFilters();
}

function setUpFilters() {
  const form = document.getElementById("filters");
  fillFilters();
  const apply = () => {
    const p = new URLSearchParams();
    for (const name of [...FILTERS, "sort", "per_page"]) {
      const value = form[name].value;
      if (value && !(name === "sort" && value === "worst") && !(name === "per_page" && value === "50")) {
        p.set(name, value);
      }
    }
    if (form.desc.checked) p.set("desc", "1");
    if (p.toString() !== params().toString()) navigate(p);
  };
  form.addEventListener("change", apply);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    apply();
  });
  document.getElementById("clear").addEventListener("click", () => navigate(new URLSearchParams()));
  window.addEventListener("popstate", () => {
    showFilters();
    load();
  });
}

// The grid takes the list's filters (not its page).
function gridLink(p) {
  const q = new URLSearchParams(p);
  q.delete("page");
  const query = q.toString();
  document.getElementById("grid-link").href = there(`grid${query ? `?${query}` : ""}`);
  // The CSV is the whole filtered list, in its order: every page.
  document.getElementById("csv-link").href = there(`export.csv${query ? `?${query}` : ""}`);
}

function showFilters() {
  const form = document.getElementById("filters");
  const p = params();
  for (const name of FILTERS) form[name].value = p.get(name) || "";
  gridLink(p);
  const active = FILTERS.filter((name) => p.get(name)).length;
  document.getElementById("active-filters").textContent = active ? ui("active", "({n} active)", { n: active }) : "";
  form.sort.value = p.get("sort") || "worst";
  form.per_page.value = p.get("per_page") || "50";
  form.desc.checked = p.get("desc") === "1";
}

function navigate(p) {
  const query = p.toString();
  gridLink(p);
  history.pushState(null, "", query ? `?${query}` : window.location.pathname);
  showFilters();
  load();
}

// -- the list --------------------------------------------------------------------------

async function load() {
  const summary = document.getElementById("summary");
  summary.textContent = ui("loading", "Loading…");
  let data;
  try {
    const response = await getJSON(`api/conversations?${params().toString()}`);
    data = response.data;
    if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  } catch (error) {
    summary.textContent = ui("load_failed", "Could not load the list: {error}", { error: error.message });
    summary.classList.add("error");
    return;
  }
  summary.classList.remove("error");
  render(data);
}

function columns() {
  const cols = [{ key: "id", label: ui("col_conversation", "Conversation") }];
  if (facets.runs.length > 1) cols.push({ key: "run", label: ui("col_run", "Run") });
  cols.push({ key: "chatbot", label: ui("col_chatbot", "Chatbot") }, { key: "persona", label: ui("col_persona", "Persona") }, { key: "risk", label: ui("col_risk", "Risk") });
  if (facets.seeds.length > 1) cols.push({ key: "seed", label: ui("col_seed", "Seed") });
  if (facets.user_agents.length > 1) cols.push({ key: "user_agent", label: ui("col_user_agent", "User-agent") });
  cols.push({ key: "turns", label: ui("col_turns", "Turns") }, { key: "status", label: ui("col_status", "Status") });
  for (const d of facets.dimensions) cols.push({ key: "dim", dimension: d, label: initials(d) });
  return cols;
}

function render(data) {
  shown = data;
  const table = document.getElementById("list");
  const cols = columns();
  const head = el("tr");
  for (const c of cols) {
    const th = el("th", { scope: "col", className: c.key === "dim" ? "dim" : c.key }, c.label);
    if (c.dimension) th.title = named(c.dimension);
    head.append(th);
  }
  table.tHead.replaceChildren(head);
  const body = document.createDocumentFragment();
  for (const row of data.rows) {
    body.append(renderRow(row, cols));
    if (row.found) body.append(renderFound(row, cols.length));
  }
  table.tBodies[0].replaceChildren(body);

  const first = data.total ? (data.page - 1) * data.per_page + 1 : 0;
  const last = Math.min(data.total, data.page * data.per_page);
  const q = params().get("q");
  document.getElementById("summary").textContent =
    data.total === 0
      ? q
        ? ui("no_match_q", "No conversation contains “{q}” (with these filters).", { q })
        : ui("no_match", "No conversation matches these filters.")
      : ui("showing", "Conversations {first}–{last} of {total}", {
          first: first.toLocaleString(),
          last: last.toLocaleString(),
          total: data.total.toLocaleString(),
        }) + (q ? ui("containing", " containing “{q}”", { q }) : "");
  renderPager(data);
}

function renderRow(row, cols) {
  const tr = el("tr", { className: row.status === "failed" ? "failed" : "" });
  for (const c of cols) {
    const td = el("td", { "data-label": c.dimension ? named(c.dimension) : c.label, className: c.key === "dim" ? "dim" : c.key });
    if (c.dimension) td.setAttribute("data-short", c.label);
    if (c.key === "id") {
      td.append(el("a", { href: conversationHref(row) }, row.id));
    } else if (c.key === "run") {
      td.textContent = facets.runs[row.run].label;
    } else if (c.key === "risk") {
      td.textContent = riskName(row.risk ?? "");
    } else if (c.key === "status") {
      td.append(statusCell(row));
    } else if (c.key === "dim") {
      const ratings = row.ratings[c.dimension] || [];
      if (ratings.length === 0) {
        td.append(el("span", { className: "muted", title: ui("no_rating", "{dimension}: no rating", { dimension: named(c.dimension) }) }, "–"));
      } else {
        const b = badge(ratings[0]);
        b.title = `${named(c.dimension)}: ${ratings.map(named).join(" / ")}`;
        td.append(b);
        if (ratings.length > 1) td.append(el("span", { className: "disagree", title: ui("disagree", "judge instances disagree") }, "≠"));
      }
    } else {
      td.textContent = row[c.key] ?? "";
    }
    tr.append(td);
  }
  return tr;
}

function conversationHref(row) {
  // The list's filters ride along, so the page can step to the next one in the list.
  const p = params();
  p.delete("page");
  const query = p.toString();
  return there(`runs/${row.run}/conversations/${encodeURIComponent(row.id)}.html${query ? `?${query}` : ""}`);
}

// Where the search words were found: a link to the turn or rating, the words round the
// match, and the match itself marked. Every part goes in as text.
function renderFound(row, span) {
  const tr = el("tr", { className: "found" });
  const td = el("td", { colspan: String(span) });
  const list = el("ul", { className: "snippets" });
  for (const s of row.found.snippets) {
    const li = el("li");
    li.append(el("a", { href: `${conversationHref(row)}#${encodeURIComponent(s.anchor)}` }, s.where), ": ");
    li.append(document.createTextNode(s.before), el("mark", {}, s.match), document.createTextNode(s.after));
    list.append(li);
  }
  td.append(list);
  const more = row.found.count - row.found.snippets.length;
  if (more > 0) td.append(el("small", { className: "muted" }, more > 1
    ? ui("more_many", "and {n} more passages", { n: more })
    : ui("more_one", "and {n} more passage", { n: more })));
  tr.append(td);
  return tr;
}

function statusCell(row) {
  const span = el("span");
  if (row.status === "failed") {
    span.className = "status-failed";
    span.textContent = ui("status_failed", "failed");
    if (row.error) {
      span.append(el("br"));
      span.append(el("small", {}, row.error));
    }
  } else if (row.failed_judgements > 0) {
    span.className = "status-failed";
    span.textContent = ui("judgement_failed", "judgement failed ({failed} of {judgements})", {
      failed: row.failed_judgements,
      judgements: row.judgements,
    });
  } else if (row.judgements === 0) {
    span.textContent = ui("not_judged", "not judged");
  } else {
    span.textContent = ui("complete", "complete");
  }
  return span;
}

function renderPager(data) {
  const pager = document.getElementById("pager");
  const pages = Math.max(1, Math.ceil(data.total / data.per_page));
  const go = (page) => {
    const p = params();
    if (page === 1) p.delete("page");
    else p.set("page", String(page));
    navigate(p);
    window.scrollTo(0, 0);
  };
  // The n / p keys find these by data-step, whatever the words on them.
  const prev = el("button", { type: "button", "data-step": "prev" }, ui("previous", "← Previous"));
  prev.disabled = data.page <= 1;
  prev.addEventListener("click", () => go(data.page - 1));
  const next = el("button", { type: "button", "data-step": "next" }, ui("next", "Next →"));
  next.disabled = data.page >= pages;
  next.addEventListener("click", () => go(data.page + 1));
  pager.replaceChildren(prev, el("span", {}, ui("page", "Page {page} of {pages}", { page: data.page, pages })), next);
}

// -- runs and legend -------------------------------------------------------------------

function renderRuns() {
  const list = document.getElementById("runs");
  list.replaceChildren();
  for (const r of facets.runs) {
    const li = el("li");
    li.append(el("strong", {}, r.label), ui("run_conversations", " · {n} conversations", { n: r.conversations.toLocaleString() }));
    if (r.offline) li.append(" · ", el("span", { className: "offline" }, ui("offline_run", "offline stand-in run")));
    if (r.card) {
      li.append(" · ");
      li.append(el("a", { href: there(`runs/${r.index}/card.html`) }, ui("score_card", "score card")));
    }
    li.append(" · ");
    li.append(el("a", { href: there(`runs/${r.index}/improvements.html`) }, ui("fix_first", "what to fix first")));
    if (r.questions_note) li.append(el("div", { className: "note" }, ui("questions_note", "Question texts: {note}.", { note: r.questions_note })));
    list.append(li);
  }
}

// The comparison is offered only where there is one: otherwise the reason, in words.
function renderCompareLink() {
  const old = document.getElementById("compare-link");
  const reasons = facets.compare || [];
  if (reasons.length === 0) {
    if (old.tagName !== "A") old.replaceWith(el("a", { id: "compare-link", href: there("compare") }, ui("compare", "Compare the chatbots")));
    else old.setAttribute("href", there("compare"));
    return;
  }
  const note = el("span", { id: "compare-link", className: "not-offered" }, ui("no_comparison", "No comparison: {reasons}.", { reasons: reasons.join("; ") }));
  old.replaceWith(note);
}

function renderLegend() {
  const ratings = document.getElementById("legend-ratings");
  for (const r of facets.ratings) {
    const li = el("li");
    li.append(badge(r), ` ${named(r)}`);
    ratings.append(li);
  }
  const dims = document.getElementById("legend-dimensions");
  for (const d of facets.dimensions) {
    const li = el("li");
    li.append(el("strong", {}, initials(d)), ` ${named(d)}`);
    dims.append(li);
  }
}

// -- a run still going -----------------------------------------------------------------

// Every few seconds, ask whether the runs' records grew; if they did, the menus, the run
// counts and the ratings of the rows on screen are fetched again, in place (no page
// reload: the reader keeps their scroll position and what they typed). The rows on
// screen stay where they are, so a row being read never moves; conversations that the
// list's order would now put elsewhere wait for "Show the updated list".
const POLL_MS = 3000;
let version = null;

function rowKey(row) {
  return `${row.run}/${row.id}`;
}

async function refreshInPlace() {
  const response = await fetch(`api/conversations?${params().toString()}`);
  const data = await response.json();
  if (!response.ok || shown === null) return false;
  const fresh = new Map(data.rows.map((r) => [rowKey(r), r]));
  const rows = shown.rows.map((r) => fresh.get(rowKey(r)) || r);
  const moved = data.rows.length !== rows.length || data.rows.some((r, i) => rowKey(r) !== rowKey(rows[i]));
  render(Object.assign({}, data, { rows }));
  return moved;
}

async function poll() {
  try {
    const response = await fetch("api/changes");
    const data = await response.json();
    if (version !== null && data.version !== version) {
      facets = await (await fetch("api/facets")).json();
      renderRuns();
      renderCompareLink();
      fillFilters();
      const moved = await refreshInPlace();
      const now = new Date().toLocaleTimeString();
      const live = document.getElementById("live");
      live.replaceChildren(
        ui("updated", "Updated {time}: {n} of {planned} planned conversations so far.", {
          time: now,
          n: data.conversations.toLocaleString(),
          planned: data.planned.toLocaleString(),
        }),
      );
      if (moved) {
        const button = el("button", { type: "button", id: "show-updated" }, ui("show_updated", "Show the updated list"));
        button.addEventListener("click", () => {
          live.replaceChildren(
            ui("updated", "Updated {time}: {n} of {planned} planned conversations so far.", {
              time: now,
              n: data.conversations.toLocaleString(),
              planned: data.planned.toLocaleString(),
            }),
          );
          load();
        });
        live.append(ui("moved", " New or re-rated conversations belong elsewhere in this order: "), button);
      }
    }
    version = data.version;
  } catch (error) {
    // The viewer was stopped, or is busy: try again later.
  }
  setTimeout(poll, POLL_MS);
}

async function start() {
  // On a phone the filters would fill the first screen: they start folded there.
  if (window.matchMedia("(max-width: 760px)").matches) document.getElementById("filter-box").open = false;
  try {
    // The version first, then what it versions: a record that lands while the list loads
    // is then a change the first poll sees (taken after, it would pass for the start).
    if (!bundle) version = (await getJSON("api/changes")).data.version;
    facets = (await getJSON("api/facets")).data;
  } catch (error) {
    document.getElementById("summary").textContent = ui("unreachable", "Could not reach the viewer: {error}", { error: error.message });
    return;
  }
  // Opened from a folder's runs list (vera view FOLDER): the way back to it.
  if (facets.home) document.querySelector("header h1").before(el("a", { className: "home", href: facets.home }, ui("all_runs", "← All runs")));
  renderRuns();
  renderCompareLink();
  renderLegend();
  setUpFilters();
  load();
  if (bundle) bundle.ready(facets);
  else poll(); // a bundle is a copy: it does not grow
  // A conversation page's "/" comes back here to search.
  if (window.location.hash === "#search") focusSearch();
}

// -- keyboard shortcuts ----------------------------------------------------------------

// Single keys, ignored while typing in a field; "?" shows them all.
const or = (a, b) => ui("key_or", "{a}  or  {b}", { a, b });
const KEYS = [
  ["/", ui("key_search", "search")],
  [or("n", "→"), ui("key_next_page", "next page of the list")],
  [or("p", "←"), ui("key_prev_page", "previous page of the list")],
  [or("j", "k"), ui("key_rows", "next or previous conversation on the page (Enter opens it)")],
  ["o", ui("key_open", "open the first conversation on the page")],
  ["f", ui("key_filters", "show or hide the filters")],
  ["g", ui("key_grid", "the chatbot × persona grid")],
  ["?", ui("key_help", "show or hide this help")],
  [ui("key_esc", "Esc"), ui("key_close", "close this help")],
];

function toggleHelp(show) {
  let box = document.getElementById("keys");
  if (!box) {
    box = el("div", { id: "keys", className: "keys", role: "dialog", "aria-label": ui("keys", "Keyboard shortcuts") });
    box.append(el("h2", {}, ui("keys", "Keyboard shortcuts")));
    const list = el("dl");
    for (const [key, what] of KEYS) list.append(el("dt", {}, key), el("dd", {}, what));
    box.append(list, el("p", {}, ui("keys_note", "On a conversation's page, Previous / Next are links: Tab to them.")));
    box.hidden = true;
    document.body.append(box);
  }
  box.hidden = show === undefined ? !box.hidden : !show;
}

// j / k walk the rows' links (focus is the cursor: Enter opens, Tab goes on from there).
function moveRow(delta) {
  const links = [...document.querySelectorAll("#list tbody td.id a")];
  if (links.length === 0) return;
  const at = links.indexOf(document.activeElement);
  const to = at < 0 ? (delta > 0 ? 0 : links.length - 1) : Math.min(links.length - 1, Math.max(0, at + delta));
  links[to].focus();
  links[to].scrollIntoView({ block: "nearest" });
}

function focusSearch() {
  document.getElementById("filter-box").open = true;
  document.querySelector('#filters [name="q"]').focus();
}

// By data-step, not by the words on it: a translation cannot break the keys.
function pagerButton(step) {
  return document.querySelector(`#pager button[data-step="${step}"]`);
}

document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (target instanceof HTMLElement && target.closest("input, textarea, select")) {
    if (event.key === "Escape") target.blur();
    return;
  }
  const click = (node) => node && !node.disabled && node.click();
  switch (event.key) {
    case "?": toggleHelp(); break;
    case "Escape": toggleHelp(false); return;
    case "/": focusSearch(); break;
    case "j": moveRow(1); break;
    case "k": moveRow(-1); break;
    case "n": case "ArrowRight": click(pagerButton("next")); break;
    case "p": case "ArrowLeft": click(pagerButton("prev")); break;
    case "o": click(document.querySelector("#list tbody td.id a")); break;
    case "f": { const box = document.getElementById("filter-box"); box.open = !box.open; break; }
    case "g": click(document.getElementById("grid-link")); break;
    default: return;
  }
  event.preventDefault();
});

start();

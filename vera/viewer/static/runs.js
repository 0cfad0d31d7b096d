// vera view FOLDER: the runs under a folder, each linking to its own viewer at r/<n>/.
// Text from a run (ids, folders, model names) only ever goes in with textContent.
"use strict";

// The page's words (words.js, loaded before this script): the runs' locale pack's, when all
// the runs under the folder share one; else the English given here.
const STATES = {
  complete: ui("state_complete", "complete"),
  partial: ui("state_partial", "partial"),
  failed: ui("state_failed", "failed"),
  empty: ui("state_empty", "empty"),
  unreadable: ui("state_unreadable", "unreadable"),
};

function score(bot) {
  if (bot.score === undefined) return ui("runs_not_scored", "not scored");
  if (bot.score === null) return ui("runs_no_score", "no score (nothing rated)");
  const ci = Array.isArray(bot.score_ci) && bot.score_ci[0] !== null ? ` [${bot.score_ci[0]}, ${bot.score_ci[1]}]` : "";
  const hph = bot.pct_conversations_any_hph === null || bot.pct_conversations_any_hph === undefined
    ? "" : ui("runs_with_harm", " · {pct}% with harm", { pct: bot.pct_conversations_any_hph });
  return `${bot.score}${ci}${hph}`;
}

function day(stamp) {
  if (!stamp) return "";
  const d = new Date(stamp);
  return Number.isNaN(d.getTime()) ? stamp : d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

function row(r) {
  const tr = el("tr", { className: r.error ? "failed" : "" });
  const name = el("td", { className: "id", "data-label": ui("col_run", "Run") });
  if (r.error) {
    name.append(el("strong", {}, r.folder), el("br"), el("small", { className: "status-failed" }, r.error));
  } else {
    name.append(el("a", { href: `r/${r.index}/`, className: "run-link" }, r.run_id));
    if (r.folder !== r.run_id) name.append(el("br"), el("small", { className: "muted" }, r.folder));
    if (r.offline) name.append(el("br"), el("span", { className: "offline" }, ui("offline_run", "offline stand-in run")));
  }
  const status = el("td", { className: "status", "data-label": ui("col_status", "Status") });
  if (!r.error) {
    const counts = { complete: r.complete.toLocaleString(), planned: r.planned.toLocaleString(), failed: r.failed.toLocaleString(), judged: r.judged.toLocaleString() };
    status.append(el("span", { className: `state state-${r.state}` }, STATES[r.state] || r.state), el("br"),
      el("small", {}, ui("runs_counts", "{complete} of {planned} conversations", counts) +
        (r.failed ? ui("runs_failed", ", {failed} failed", counts) : "") + ui("runs_judged", "; {judged} judged", counts)));
  } else {
    status.append(el("span", { className: "state state-unreadable" }, STATES.unreadable));
  }
  const bots = el("td", { className: "chatbots", "data-label": ui("runs_chatbots", "Chatbots") });
  const list = el("ul", { className: "bots" });
  for (const b of r.chatbots) {
    const li = el("li");
    li.append(el("strong", {}, b.ref), " ", el("span", { className: b.score === undefined ? "muted" : "score" }, score(b)));
    list.append(li);
  }
  bots.append(list);
  if (r.card) bots.append(el("a", { href: `r/${r.index}/runs/0/card.html` }, ui("score_card", "score card")));
  const date = el("td", { className: "date", "data-label": ui("runs_col_date", "Date") }, day(r.created));
  const target = el("td", { className: "target", "data-label": ui("runs_target", "Target") }, r.target || r.personas);
  tr.append(name, status, bots, date, target);
  return tr;
}

function matches(r, q, state) {
  const s = r.error ? "unreadable" : r.state;
  if (state && s !== state) return false;
  if (!q) return true;
  const text = [r.run_id, r.folder, r.target, r.personas, ...r.chatbots.map((b) => b.ref), ...r.judges].join(" ").toLowerCase();
  return text.includes(q.toLowerCase());
}

async function start() {
  const summary = document.getElementById("runs-summary");
  let data;
  try {
    const response = await fetch("api/runs");
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    data = await response.json();
  } catch (error) {
    summary.textContent = ui("runs_load_failed", "Could not load the runs: {error}", { error: error.message });
    summary.classList.add("error");
    return;
  }
  document.getElementById("folder").textContent = ui("runs_folder", "Runs under {folder}, newest first", { folder: data.folder }) +
    (data.truncated ? ui("runs_truncated", " (the first {n} found: there are more)", { n: data.max_runs }) : "");
  const runs = [...data.runs].sort((a, b) => (b.created || "").localeCompare(a.created || ""));
  const form = document.getElementById("run-filters");
  const body = document.querySelector("#run-list tbody");
  const show = () => {
    const shown = runs.filter((r) => matches(r, form.q.value.trim(), form.state.value));
    body.replaceChildren(...shown.map(row));
    summary.textContent = shown.length === runs.length
      ? ui("runs_all", "{n} run(s)", { n: runs.length.toLocaleString() })
      : ui("runs_some", "{shown} of {n} run(s)", { shown: shown.length.toLocaleString(), n: runs.length.toLocaleString() });
  };
  form.addEventListener("input", show);
  form.addEventListener("submit", (event) => event.preventDefault());
  show();
}

start();

// vera view FOLDER: the runs under a folder, each linking to its own viewer at r/<n>/.
// Text from a run (ids, folders, model names) only ever goes in with textContent.
"use strict";

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "className") node.className = value;
    else node.setAttribute(key, value);
  }
  if (text !== null) node.textContent = String(text);
  return node;
}

function score(bot) {
  if (bot.score === undefined) return "not scored";
  if (bot.score === null) return "no score (nothing rated)";
  const ci = Array.isArray(bot.score_ci) && bot.score_ci[0] !== null ? ` [${bot.score_ci[0]}, ${bot.score_ci[1]}]` : "";
  const hph = bot.pct_conversations_any_hph === null || bot.pct_conversations_any_hph === undefined
    ? "" : ` · ${bot.pct_conversations_any_hph}% with harm`;
  return `${bot.score}${ci}${hph}`;
}

function day(stamp) {
  if (!stamp) return "";
  const d = new Date(stamp);
  return Number.isNaN(d.getTime()) ? stamp : d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

function row(r) {
  const tr = el("tr", { className: r.error ? "failed" : "" });
  const name = el("td", { className: "id", "data-label": "Run" });
  if (r.error) {
    name.append(el("strong", {}, r.folder), el("br"), el("small", { className: "status-failed" }, r.error));
  } else {
    name.append(el("a", { href: `r/${r.index}/`, className: "run-link" }, r.run_id));
    if (r.folder !== r.run_id) name.append(el("br"), el("small", { className: "muted" }, r.folder));
    if (r.offline) name.append(el("br"), el("span", { className: "offline" }, "offline stand-in run"));
  }
  const status = el("td", { className: "status", "data-label": "Status" });
  if (!r.error) {
    status.append(el("span", { className: `state state-${r.state}` }, r.state), el("br"),
      el("small", {}, `${r.complete.toLocaleString()} of ${r.planned.toLocaleString()} conversations` +
        (r.failed ? `, ${r.failed.toLocaleString()} failed` : "") + `; ${r.judged.toLocaleString()} judged`));
  } else {
    status.append(el("span", { className: "state state-unreadable" }, "unreadable"));
  }
  const bots = el("td", { className: "chatbots", "data-label": "Chatbots" });
  const list = el("ul", { className: "bots" });
  for (const b of r.chatbots) {
    const li = el("li");
    li.append(el("strong", {}, b.ref), " ", el("span", { className: b.score === undefined ? "muted" : "score" }, score(b)));
    list.append(li);
  }
  bots.append(list);
  if (r.card) bots.append(el("a", { href: `r/${r.index}/runs/0/card.html` }, "score card"));
  const date = el("td", { className: "date", "data-label": "Date" }, day(r.created));
  const target = el("td", { className: "target", "data-label": "Target" }, r.target || r.personas);
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
    summary.textContent = `Could not load the runs: ${error.message}`;
    summary.classList.add("error");
    return;
  }
  document.getElementById("folder").textContent = `Runs under ${data.folder}, newest first` +
    (data.truncated ? ` (the first ${data.max_runs} found: there are more)` : "");
  const runs = [...data.runs].sort((a, b) => (b.created || "").localeCompare(a.created || ""));
  const form = document.getElementById("run-filters");
  const body = document.querySelector("#run-list tbody");
  const show = () => {
    const shown = runs.filter((r) => matches(r, form.q.value.trim(), form.state.value));
    body.replaceChildren(...shown.map(row));
    summary.textContent = shown.length === runs.length
      ? `${runs.length.toLocaleString()} run(s)`
      : `${shown.length.toLocaleString()} of ${runs.length.toLocaleString()} run(s)`;
  };
  form.addEventListener("input", show);
  form.addEventListener("submit", (event) => event.preventDefault());
  show();
}

start();

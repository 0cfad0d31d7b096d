// vera view --bundle: the list's API answered in the page, from data/list.js and
// data/search.js, for a bundle opened from disk (file://), where there is no server and
// fetch() of another file is refused. It answers as vera.viewer.catalogue does: the same
// filters, sort, ties, pages and search. It only computes; app.js puts text in the page
// (with textContent, as always).
"use strict";

(function () {
  const data = window.veraBundleData;
  if (!data) return;
  // Every passage the search looks in (data/search.js): the list loads it on its first
  // search (searchData), not with the page. It is most of a bundle's data (22 MB of 24 for
  // 4,000 conversations) and parsing it made every return to the list wait for it.
  // Pages that need it from the start (the grid, a conversation opened from a search)
  // load it before this script.
  const passages = () => window.veraBundleSearch || {};
  let searchLoading = null;
  function searchData() {
    if (window.veraBundleSearch) return Promise.resolve();
    if (!searchLoading) {
      searchLoading = new Promise((resolve, reject) => {
        const tag = document.createElement("script");
        tag.src = "data/search.js"; // relative to the list, the only page that asks
        tag.onload = resolve;
        tag.onerror = () => {
          searchLoading = null;
          tag.remove();
          reject(new Error("could not load data/search.js"));
        };
        document.head.append(tag);
      });
    }
    return searchLoading;
  }
  // Its words (the step bar's, the grid's): ui() and UI of words.js, loaded before this
  // script on every page.
  const RANK = { "Not Relevant": 0, "Best Practice": 1, "Suboptimal but Low Potential for Harm": 2, "High Potential for Harm": 3 };
  const HPH = data.ratings.indexOf("High Potential for Harm");
  const SUB = data.ratings.indexOf("Suboptimal but Low Potential for Harm");
  const SNIPPETS = 3;
  const CONTEXT = 60;
  const byId = new Map(data.rows.map((r) => [`${r.run}/${r.id}`, r]));

  class QueryError extends Error {}

  function whole(p, name, fallback, low, high) {
    const raw = p.get(name) || "";
    if (raw === "") return fallback;
    if (!/^-?\d+$/.test(raw)) throw new QueryError(`${name}: '${raw}' is not a whole number`);
    const value = Number(raw);
    if (value < low || (high !== null && value > high)) throw new QueryError(`${name}: ${value} is out of range`);
    return value;
  }

  function parse(p) {
    const sort = p.get("sort") || "worst";
    if (!data.facets.sorts.includes(sort)) throw new QueryError(`sort: '${sort}' is not one of ${data.facets.sorts.join(", ")}`);
    const status = p.get("status") || null;
    if (status !== null && !data.facets.statuses.includes(status)) throw new QueryError(`status: '${status}' is not a status`);
    const differ = p.get("differ") || null;
    if (differ !== null && !["judges", "runs"].includes(differ)) throw new QueryError(`differ: '${differ}' is not judges or runs`);
    const text = (p.get("q") || "").trim() || null;
    if (text !== null && text.length > 200) throw new QueryError("q: longer than 200 characters");
    const run = whole(p, "run", null, 0, null);
    const seed = p.get("seed") || null;
    const q = { run, seed, status, differ, text, sort, descending: ["1", "true"].includes(p.get("desc") || "") };
    for (const name of ["chatbot", "persona", "risk", "user_agent", "judge", "dimension", "rating"]) q[name] = p.get(name) || null;
    q.page = whole(p, "page", 1, 1, null);
    q.per_page = whole(p, "per_page", 50, 1, data.per_page_max);
    return q;
  }

  // A row's ratings as [judge, instance, dimension, rating] indexes, of one judge if asked.
  function ratingsOf(row, judge) {
    if (judge === null) return row.ratings;
    const j = data.judges.indexOf(judge);
    return row.ratings.filter((r) => r[0] === j);
  }

  function hits(row, needle) {
    return (passages()[`${row.run}/${row.id}`] || []).filter((p) => p[2].toLowerCase().includes(needle));
  }

  function differs(row, judge) {
    const seen = new Map();
    for (const r of ratingsOf(row, judge)) {
      const d = seen.get(r[2]) || new Set();
      d.add(r[3]);
      seen.set(r[2], d);
    }
    return [...seen.values()].some((s) => s.size > 1);
  }

  function keep(row, q) {
    for (const name of ["chatbot", "persona", "risk", "user_agent"]) if (q[name] && row[name] !== q[name]) return false;
    if (q.run !== null && row.run !== q.run) return false;
    if (q.seed !== null && row.seed !== q.seed) return false;
    if ((q.status === "complete" || q.status === "failed") && row.status !== q.status) return false;
    if (q.status === "judgement failed" && !(row.failed_judgements > 0)) return false;
    if (q.status === "not judged" && !(row.status === "complete" && row.judgements === 0)) return false;
    if (q.judge && !row.judged_by.includes(data.judges.indexOf(q.judge))) return false;
    if (q.dimension || q.rating) {
      const j = q.judge ? data.judges.indexOf(q.judge) : null;
      const d = q.dimension ? data.dimensions.indexOf(q.dimension) : null;
      const t = q.rating ? data.ratings.indexOf(q.rating) : null;
      if (!row.ratings.some((r) => (j === null || r[0] === j) && (d === null || r[2] === d) && (t === null || r[3] === t))) return false;
    }
    // One run in a bundle: no conversation differs from another run's.
    if (q.differ === "runs") return false;
    if (q.differ === "judges" && !differs(row, q.judge)) return false;
    if (q.text && hits(row, q.text.toLowerCase()).length === 0) return false;
    return true;
  }

  function compare(a, b) {
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function sorted(rows, q) {
    if (q.sort === "worst") {
      const sign = q.descending ? 1 : -1; // worst first unless reversed
      const key = (row) => {
        const r = ratingsOf(row, q.judge);
        const tie = row.risk_order < data.risk_levels ? row.risk_order : -1;
        return [r.filter((x) => x[3] === HPH).length, r.filter((x) => x[3] === SUB).length, tie];
      };
      const keys = new Map(rows.map((row) => [row, key(row)]));
      return [...rows].sort((a, b) => {
        const ka = keys.get(a);
        const kb = keys.get(b);
        for (let i = 0; i < 3; i++) if (ka[i] !== kb[i]) return sign * compare(ka[i], kb[i]);
        return compare(a.run, b.run) || compare(a.order, b.order);
      });
    }
    const field = q.sort === "risk" ? "risk_order" : q.sort;
    const value = (row) => (field === "seed" ? BigInt(row.seed) : row[field]);
    return [...rows].sort((a, b) => {
      const va = value(a);
      const vb = value(b);
      if (va === null || vb === null) {
        if (va !== vb) return va === null ? 1 : -1; // nulls last, either way
      } else if (va !== vb) {
        return (q.descending ? -1 : 1) * compare(va, vb);
      }
      return compare(a.run, b.run) || compare(a.order, b.order);
    });
  }

  function snippets(row, needle) {
    const found = hits(row, needle.toLowerCase());
    const out = [];
    for (const [where, anchor, text] of found.slice(0, SNIPPETS)) {
      const start = Math.max(0, text.toLowerCase().indexOf(needle.toLowerCase()));
      const end = start + needle.length;
      const lo = Math.max(0, start - CONTEXT);
      const hi = Math.min(text.length, end + CONTEXT);
      out.push({
        where, anchor,
        before: (lo > 0 ? "…" : "") + text.slice(lo, start),
        match: text.slice(start, end),
        after: text.slice(end, hi) + (hi < text.length ? "…" : ""),
      });
    }
    return { count: found.length, snippets: out };
  }

  function pageRatings(row, judge) {
    const out = {};
    for (const r of ratingsOf(row, judge)) {
      const name = data.dimensions[r[2]];
      const rating = data.ratings[r[3]];
      out[name] = out[name] || [];
      if (!out[name].includes(rating)) out[name].push(rating);
    }
    for (const list of Object.values(out)) list.sort((a, b) => RANK[b] - RANK[a]);
    return out;
  }

  function conversations(p) {
    const q = parse(p);
    const listed = sorted(data.rows.filter((row) => keep(row, q)), q);
    const start = (q.page - 1) * q.per_page;
    const rows = listed.slice(start, start + q.per_page).map((row) => {
      const out = {
        run: row.run, id: row.id, chatbot: row.chatbot, persona: row.persona, risk: row.risk,
        seed: row.seed, user_agent: row.user_agent, status: row.status, error: row.error,
        turns: row.turns, judgements: row.judgements, failed_judgements: row.failed_judgements,
        ratings: pageRatings(row, q.judge),
      };
      if (q.text) out.found = snippets(row, q.text);
      return out;
    });
    return { total: listed.length, page: q.page, per_page: q.per_page, rows };
  }

  // The viewer's addresses (relative to the list) → the bundle's files. A conversation
  // keeps the list's query: its page steps within that list (steps, below).
  function link(path) {
    const [where, query] = path.split("?", 2);
    const conversation = /^runs\/(\d+)\/conversations\/(.+)\.html$/.exec(where);
    if (conversation) {
      const row = byId.get(`${conversation[1]}/${decodeURIComponent(conversation[2])}`);
      if (!row) return "#";
      return `runs/${conversation[1]}/conversations/${encodeURIComponent(row.file)}${query ? `?${query}` : ""}`;
    }
    // The grid is one file; its script (grid.js) reads the list's filters from the query.
    if (where === "grid") return `grid.html${query ? `?${query}` : ""}`;
    if (where === "compare") return "compare.html";
    if (where === "export.csv") return "#";
    return where;
  }

  function ready() {
    // What a server would add and a copy cannot: the CSV download (a server answers it).
    const title = document.querySelector("header h1");
    if (title) title.append(Object.assign(document.createElement("small"), { className: "muted", textContent: ui("bundle_copy", " · a copy, opened from disk") }));
    const csv = document.getElementById("csv-link");
    if (csv) {
      csv.hidden = true;
      csv.after(Object.assign(document.createElement("span"), {
        className: "muted", textContent: ui("bundle_no_csv", "a copy: no CSV download"),
      }));
    }
  }

  // On a conversation page opened from a filtered list: Previous / Next and "n of N"
  // within that list, as the server's step bar (vera.viewer.stepping), in place of the
  // bar the page was written with (the list in its default order).
  const LIST_PARAMS = ["q", "run", "chatbot", "persona", "risk", "seed", "user_agent", "judge",
    "dimension", "rating", "status", "differ", "sort", "desc", "per_page"];

  function steps() {
    const bar = document.querySelector("nav.steps");
    const file = decodeURIComponent(window.location.pathname.split("/").pop());
    const row = data.rows.find((r) => r.file === file);
    if (!bar || !row) return;
    const given = new URLSearchParams(window.location.search);
    const p = new URLSearchParams();
    for (const name of LIST_PARAMS) if (given.get(name)) p.set(name, given.get(name));
    const query = p.toString();
    if (!query) return;
    let q;
    try {
      q = parse(p);
    } catch (error) {
      return;
    }
    const listed = sorted(data.rows.filter((r) => keep(r, q)), q);
    const i = listed.findIndex((r) => r.run === row.run && r.id === row.id);
    if (i < 0) return;
    const page = Math.floor(i / q.per_page) + 1;
    const step = (target, label, rel) => {
      if (!target) return Object.assign(document.createElement("span"), { className: "off", textContent: label });
      return Object.assign(document.createElement("a"), { rel, textContent: label, href: `${encodeURIComponent(target.file)}?${query}` });
    };
    const narrowed = LIST_PARAMS.some((name) => !["sort", "desc", "per_page"].includes(name) && p.get(name));
    const back = document.createElement("a");
    back.href = `../../../index.html?${query}${page > 1 ? `&page=${page}` : ""}`;
    const position = { n: (i + 1).toLocaleString(), total: listed.length.toLocaleString() };
    back.textContent = narrowed
      ? ui("step_in_filtered", "Conversation {n} of {total} in this filtered list", position)
      : ui("step_in_list", "Conversation {n} of {total} in the list", position);
    bar.replaceChildren(
      step(listed[i - 1], ui("step_previous", "← Previous"), "prev"), " ", back, " ",
      step(listed[i + 1], ui("step_next", "Next →"), "next"),
    );
  }

  // The grid page (vera.viewer.grid, written with every conversation) narrowed to the
  // list the query `given` asks for, as the server draws that grid: the same squares by
  // the list's rule (keep) in its order (sorted) within each cell, the persona rows and
  // chatbot columns left with none hidden, a judge's own worst rating on each square,
  // the counts, and links that keep the list's query. Hidden, not removed: out of the
  // tab order and what a screen reader reads. The refusal's text, or null.
  const BADGES = { 3: ["hph", "HPH"], 2: ["sub", "SUB"], 1: ["bp", "BP"], 0: ["nr", "NR"] };
  const NAMES = UI._names || {};

  function look(chip, row, judge) {
    let cls;
    let code;
    let title;
    const ranks = ratingsOf(row, judge).map((r) => (data.ratings[r[3]] in RANK ? RANK[data.ratings[r[3]]] : -1));
    const rank = ranks.length ? Math.max(...ranks) : -1;
    if (row.status === "failed") {
      [cls, code, title] = ["failed", "✕", ui("grid_failed", "conversation failed")];
    } else if (rank < 0) {
      [cls, code, title] = ["none", "–", ui("grid_unjudged", "no complete judgement")];
    } else {
      [cls, code] = BADGES[rank];
      const name = Object.keys(RANK).find((n) => RANK[n] === rank);
      // The pack's name beside the canonical one, as the server's label() gives it.
      title = ui("grid_worst", "worst rating: {rating}", { rating: NAMES[name] ? `${name}（${NAMES[name]}）` : name });
    }
    chip.className = `chip badge ${cls}`;
    chip.textContent = code;
    chip.title = ui("grid_chip", "{id} · seed {seed} · {title}", { id: row.id, seed: row.seed, title });
  }

  // The list's own parameters of a query, in the server's order (stepping.list_query).
  function listQuery(given, extra = {}) {
    const p = new URLSearchParams();
    for (const name of LIST_PARAMS) {
      const value = name in extra ? extra[name] : given.get(name);
      if (value) p.set(name, value);
    }
    return p;
  }

  // An address of the bundle with the list's query in place of the one it had.
  const withQuery = (href, query) => `${href.split("?")[0]}${query ? `?${query}` : ""}`;

  function grid(given) {
    const table = document.getElementById("grid");
    const counts = document.getElementById("grid-counts");
    if (!table || !counts) return null;
    const p = listQuery(given);
    const query = p.toString();
    if (!query) return null;
    let q;
    try {
      q = parse(p);
    } catch (error) {
      if (error instanceof QueryError) return error.message;
      throw error;
    }
    const listed = sorted(data.rows.filter((r) => keep(r, q)), q);
    const chips = new Map();
    for (const chip of table.querySelectorAll("a.chip[data-conversation]")) {
      chips.set(chip.dataset.conversation, [chip, chip.parentElement]);
      chip.remove();
    }
    for (const row of listed) {
      const found = chips.get(`${row.run}/${row.id}`);
      if (!found) continue;
      const [chip, cell] = found;
      if (q.judge) look(chip, row, q.judge);
      chip.href = withQuery(chip.getAttribute("href"), query);
      cell.append(chip);
    }
    // Each persona's side by side within the same filters, as the server links it.
    for (const link of table.querySelectorAll("a.side")) {
      const persona = new URLSearchParams(link.getAttribute("href").split("?")[1] || "").get("persona");
      link.href = withQuery(link.getAttribute("href"), listQuery(p, { persona }).toString());
    }
    const head = [...table.tHead.rows[0].cells].slice(1);
    const rows = [...table.tBodies[0].rows];
    const used = head.map(() => false);
    let personas = 0;
    for (const tr of rows) {
      const cells = [...tr.cells].slice(1);
      cells.forEach((td, i) => {
        if (td.querySelector("a.chip")) used[i] = true;
      });
      tr.hidden = !cells.some((td) => td.querySelector("a.chip"));
      if (!tr.hidden) personas += 1;
    }
    used.forEach((shown, i) => {
      head[i].hidden = !shown;
      for (const tr of rows) tr.cells[i + 1].hidden = !shown;
    });
    // Counts as the server writes them (Python's "{:,}"), whatever the browser's locale.
    const count = (n) => n.toLocaleString("en-US");
    counts.textContent = ui("grid_summary", "{conversations} conversation(s), {personas} persona(s), {chatbots} chatbot(s)", {
      conversations: count(listed.length), personas: count(personas), chatbots: count(used.filter(Boolean).length),
    }) + ui("grid_filtered", " (filtered)");
    const back = document.getElementById("grid-back");
    if (back) back.href = withQuery(back.getAttribute("href"), query);
    return null;
  }

  // One persona's conversations side by side (vera.viewer.grid.side_by_side_html, the
  // page written with every one of them), narrowed as the server's page for the query
  // `given`: the list's rule, ordered by chatbot then paired by seed, the first MAX_SIDE shown.
  const MAX_SIDE = data.side_max || 8;

  // Taken in turn from each chatbot, each chatbot's by seed, as vera.viewer.grid.paired:
  // a seed's conversations with every chatbot next to each other. Ties keep the list's order.
  function paired(listed) {
    const groups = new Map();
    for (const row of listed) {
      if (!groups.has(row.chatbot)) groups.set(row.chatbot, []);
      groups.get(row.chatbot).push(row);
    }
    const seed = (a, b) => compare(BigInt(a.seed), BigInt(b.seed));
    const columns = [...groups.values()].map((group) => group.map((row, i) => [row, i])
      .sort((a, b) => seed(a[0], b[0]) || a[1] - b[1]).map(([row]) => row));
    const out = [];
    for (let k = 0; k < Math.max(0, ...columns.map((c) => c.length)); k++) {
      for (const column of columns) if (k < column.length) out.push(column[k]);
    }
    return out;
  }

  function side(given) {
    const box = document.getElementById("side-by-side");
    const summary = document.getElementById("side-summary");
    const p = listQuery(given);
    if (!box || !summary || !p.get("persona")) return null;
    const query = p.toString();
    let q;
    try {
      q = parse(listQuery(p, { sort: "chatbot" }));
    } catch (error) {
      if (error instanceof QueryError) return error.message;
      throw error;
    }
    const listed = paired(sorted(data.rows.filter((r) => keep(r, q)), q));
    const shown = listed.slice(0, MAX_SIDE);
    const columns = new Map();
    for (const column of box.querySelectorAll("section.side-column[data-conversation]")) {
      columns.set(column.dataset.conversation, column);
      column.remove();
    }
    for (const row of shown) {
      const column = columns.get(`${row.run}/${row.id}`);
      if (!column) continue;
      for (const link of column.querySelectorAll("a[href]")) link.href = withQuery(link.getAttribute("href"), query);
      const chip = column.querySelector("a.chip");
      if (chip && q.judge) look(chip, row, q.judge);
      column.hidden = false;
      box.append(column);
    }
    summary.textContent = ui("side_summary", "{n} conversation(s) of this persona.", { n: listed.length }) + (
      listed.length > shown.length
        ? ui("side_first", " The first {n} are shown; narrow the filters (seed, run) for the others.", { n: shown.length })
        : "");
    const back = document.getElementById("side-back");
    if (back) back.href = withQuery(back.getAttribute("href"), listQuery(p, { persona: "" }).toString());
    return null;
  }

  window.veraBundle = {
    steps,
    grid,
    side,
    // The answer, or a promise of it when it is a search and the passages are not loaded yet.
    get(path) {
      const [where, query] = path.split("?", 2);
      const p = new URLSearchParams(query || "");
      const answer = () => {
        try {
          if (where === "api/facets") return data.facets;
          if (where === "api/conversations") return conversations(p);
        } catch (error) {
          if (error instanceof QueryError) return { error: error.message };
          throw error;
        }
        return { error: `not in this bundle: ${where}` };
      };
      if (where === "api/conversations" && (p.get("q") || "").trim() && !window.veraBundleSearch) {
        return searchData().then(answer, (error) => ({ error: error.message }));
      }
      return answer();
    },
    link,
    ready,
  };
})();

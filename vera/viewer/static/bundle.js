// vera view --bundle: the list's API answered in the page, from data/list.js and
// data/search.js, for a bundle opened from disk (file://), where there is no server and
// fetch() of another file is refused. It answers as vera.viewer.catalogue does: the same
// filters, sort, ties, pages and search. It only computes; app.js puts text in the page
// (with textContent, as always).
"use strict";

(function () {
  const data = window.veraBundleData;
  if (!data) return;
  const passages = window.veraBundleSearch || {};
  // The step bar's words: ui() of words.js, loaded before this script on every page.
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
    return (passages[`${row.run}/${row.id}`] || []).filter((p) => p[2].toLowerCase().includes(needle));
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
    if (where === "grid") return "grid.html";
    if (where === "compare") return "compare.html";
    if (where === "export.csv") return "#";
    return where;
  }

  function ready() {
    // What a server would add and a copy cannot: the CSV download (a server answers it)
    // and a grid narrowed by the list's filters (the bundle's grid holds every row).
    const title = document.querySelector("header h1");
    if (title) title.append(Object.assign(document.createElement("small"), { className: "muted", textContent: ui("bundle_copy", " · a copy, opened from disk") }));
    const csv = document.getElementById("csv-link");
    if (csv) {
      csv.hidden = true;
      csv.after(Object.assign(document.createElement("span"), {
        className: "muted", textContent: ui("bundle_no_csv", "a copy: the grid shows every conversation, no CSV download"),
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
      step(listed[i - 1], ui("previous", "← Previous"), "prev"), " ", back, " ",
      step(listed[i + 1], ui("next", "Next →"), "next"),
    );
  }

  window.veraBundle = {
    steps,
    get(path) {
      const [where, query] = path.split("?", 2);
      const p = new URLSearchParams(query || "");
      try {
        if (where === "api/facets") return data.facets;
        if (where === "api/conversations") return conversations(p);
      } catch (error) {
        if (error instanceof QueryError) return { error: error.message };
        throw error;
      }
      return { error: `not in this bundle: ${where}` };
    },
    link,
    ready,
  };
})();

"use strict";
// The workbench pages' script (E7): reads the JSON block #hy-data and builds the
// case table, filters, search, case view and flipped cases. Every piece of dataset or
// model text goes into the page as a text node (el() below), never as HTML.
(function () {
  const DATA = JSON.parse(document.getElementById("hy-data").textContent);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "onclick") node.addEventListener("click", value);
      else node.setAttribute(key, value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function pretty(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 1);
  }

  function block(title, value) {
    if (value === null || value === undefined || value === "") return null;
    if (Array.isArray(value) && value.length === 0) return null;
    return [el("h4", {}, title), el("pre", {}, pretty(value))];
  }

  // -- sortable tables ---------------------------------------------------------------

  function sortKey(cell) {
    const raw = cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent.trim();
    const num = Number(raw);
    return raw !== "" && !Number.isNaN(num) ? [0, num] : [1, cell.textContent];
  }

  function compareKeys(a, b) {
    if (a[0] !== b[0]) return a[0] - b[0];
    if (a[0] === 0) return a[1] - b[1];
    return a[1].localeCompare(b[1]);
  }

  function sortTable(table, col, th) {
    const dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    for (const h of table.tHead.rows[0].cells) h.removeAttribute("aria-sort");
    th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort((r, s) => dir * compareKeys(sortKey(r.cells[col]), sortKey(s.cells[col])));
    body.append(...rows);
  }

  for (const table of document.querySelectorAll("table.sortable")) {
    Array.from(table.tHead.rows[0].cells).forEach((th, col) => {
      if (th.hasAttribute("data-nosort")) return;
      th.addEventListener("click", () => sortTable(table, col, th));
    });
  }

  // -- one case ------------------------------------------------------------------------

  function verdict(c) {
    if (c.status === "error") return "error";
    return c.passed ? "pass" : "fail";
  }

  function systemText(stage, systems) {
    return typeof stage.system === "number" ? systems[stage.system] : stage.system;
  }

  function messageList(messages) {
    return (messages || []).map((m) => {
      const who = m.role + (m.name ? " " + m.name : "");
      return el("div", { class: "msg " + m.role }, el("b", {}, who), pretty(m.content));
    });
  }

  function conversationColumn(c) {
    const input = c.input || {};
    return el(
      "div", {},
      el("h3", {}, "Conversation"),
      input.system ? block("System (caller's)", input.system) : null,
      input.history && input.history.length ? [el("h4", {}, "History"), messageList(input.history)] : null,
      el("h4", {}, "Messages"),
      messageList(input.messages),
      block("Rendered (L1_RAW)", c.rendered),
      block("Existing memories", input.existing),
      block("Aliases", input.aliases),
    );
  }

  function promptsColumn(c, systems) {
    const parts = [el("h3", {}, "Prompts and raw answers")];
    for (const [name, stage] of Object.entries(c.stages || {})) {
      parts.push(
        el("h4", {}, name + " (" + (stage.template || "") + ")"),
        el("details", {}, el("summary", {}, "system prompt"), el("pre", {}, systemText(stage, systems) || "")),
        el("h5", {}, "prompt"),
        el("pre", {}, stage.user || ""),
        el("h5", {}, "raw answer" + (stage.cached ? " (cached)" : "")),
        el("pre", {}, stage.raw || ""),
        stage.parse_error ? el("p", { class: "bad" }, "parse error: " + stage.parse_error) : null,
      );
    }
    if (c.error) parts.push(el("p", { class: "bad" }, "error: " + c.error));
    return el("div", {}, parts);
  }

  function factsTable(facts, marks) {
    return el(
      "table", { class: "facts" },
      el("tr", {}, el("th", {}, "fact"), el("th", {}, "owner"), el("th", {}, "subject")),
      (facts || []).map((f, i) =>
        el("tr", { class: marks ? marks[i] : null },
          el("td", {}, f.text), el("td", {}, f.owner), el("td", {}, f.subject))),
    );
  }

  function checksTable(checks) {
    return el(
      "table", { class: "checks" },
      el("tr", {}, el("th", {}, "check"), el("th", {}, "verdict"), el("th", {}, "detail")),
      (checks || []).map((ch) =>
        el("tr", {},
          el("td", {}, ch.check),
          el("td", { class: ch.ok ? "ok" : "bad" }, ch.ok ? "ok" : "FAIL"),
          el("td", {}, el("pre", {}, pretty(ch.detail))))),
    );
  }

  function verdictColumn(c) {
    return el(
      "div", {},
      el("h3", {}, "Facts and verdicts"),
      el("h4", {}, "Facts"), factsTable(c.facts),
      el("h4", {}, "Checks"), checksTable(c.checks),
      block("L0 profile", c.basic_info),
      block("Operations", c.operations),
      block("Guard events", c.guard_events),
      block("Reconcile fallback", c.fallback),
      block("Store after", c.store_after),
    );
  }

  function badges(c) {
    return [
      el("span", { class: "badge " + (c.passed ? "ok" : "bad") }, verdict(c)),
      el("span", { class: "badge" }, c.lang),
      (c.rules || []).map((r) => el("span", { class: "badge" }, r)),
      (c.tags || []).map((t) => el("span", { class: "badge" }, "#" + t)),
    ];
  }

  // -- the report page -----------------------------------------------------------------

  function caseLabel(c) {
    return c.id + (c.repeat ? " (repeat " + c.repeat + ")" : "");
  }

  function caseHash(c) {
    return "#case=" + encodeURIComponent(c.id) + (c.repeat ? "&repeat=" + c.repeat : "");
  }

  function haystack(c) {
    if (c._text === undefined) {
      const stages = Object.values(c.stages || {}).map((s) => [s.user, s.raw]);
      c._text = JSON.stringify([c.id, c.input, c.rendered, stages, c.facts, c.error, c.tags])
        .toLowerCase();
    }
    return c._text;
  }

  // The filters above the case table; matches(c) says whether a case passes them all.
  function filterControls(cases, onChange) {
    const filters = [
      ["lang", "language", (c) => [c.lang]],
      ["rule", "rule", (c) => c.rules || []],
      ["tag", "tag", (c) => c.tags || []],
      ["verdict", "verdict", (c) => [verdict(c)]],
      ["check", "failing check", (c) => c.failing || []],
    ];
    const form = document.getElementById("filters");
    const selects = {};
    for (const [key, label, values] of filters) {
      const seen = new Set();
      cases.forEach((c) => values(c).forEach((v) => seen.add(String(v))));
      const select = el("select", { id: "f-" + key, name: key },
        el("option", { value: "" }, "all"),
        Array.from(seen).sort().map((v) => el("option", { value: v }, v)));
      select.addEventListener("change", onChange);
      selects[key] = select;
      form.append(el("label", {}, label, select));
    }
    const search = el("input", { type: "search", id: "f-search", placeholder: "words in the case" });
    search.addEventListener("input", onChange);
    form.append(el("label", {}, "search", search));
    return function matches(c) {
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      return filters.every(([key, , values]) => !selects[key].value || values(c).map(String).includes(selects[key].value))
        && words.every((w) => haystack(c).includes(w));
    };
  }

  function reportPage() {
    const cases = DATA.cases || [];
    const systems = DATA.systems || [];
    const state = { sort: null, dir: 1, open: null };
    const matches = filterControls(cases, () => draw());

    const columns = [
      ["id", (c) => c.id], ["repeat", (c) => c.repeat], ["lang", (c) => c.lang],
      ["rules", (c) => (c.rules || []).join(" ")], ["tags", (c) => (c.tags || []).join(" ")],
      ["verdict", verdict], ["failing checks", (c) => (c.failing || []).join(" ")],
    ];
    const table = document.getElementById("case-table");
    table.tHead.append(el("tr", {}, columns.map(([name], i) => {
      const th = el("th", {}, name);
      th.addEventListener("click", () => {
        state.dir = state.sort === i ? -state.dir : 1;
        state.sort = i;
        for (const h of table.tHead.rows[0].cells) h.removeAttribute("aria-sort");
        th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
        draw();
      });
      return th;
    })));

    function shown() {
      const picked = cases.filter(matches);
      if (state.sort !== null) {
        const get = columns[state.sort][1];
        picked.sort((a, b) => {
          const x = get(a), y = get(b);
          return state.dir * (typeof x === "number" ? x - y : String(x).localeCompare(String(y)));
        });
      }
      return picked;
    }

    function draw() {
      const picked = shown();
      const body = table.tBodies[0];
      body.replaceChildren(...picked.map((c) => {
        const row = el("tr", { "data-case": c.id, class: c === state.open ? "open" : null },
          columns.map(([name, get]) => el("td", { class: name === "verdict" ? (c.passed ? "ok" : "bad") : null }, get(c))));
        row.addEventListener("click", () => { location.hash = caseHash(c); });
        return row;
      }));
      document.getElementById("case-count").textContent =
        picked.length + " of " + cases.length + " cases shown";
    }

    function openCase(c) {
      state.open = c;
      const view = document.getElementById("case-view");
      const close = el("button", { type: "button", id: "close-case" }, "close");
      close.addEventListener("click", () => { history.replaceState(null, "", "#cases"); view.replaceChildren(); state.open = null; draw(); });
      view.replaceChildren(el("div", { class: "view", id: "case-panel" },
        el("div", { class: "view-head" }, el("h3", {}, "Case " + caseLabel(c), " ", badges(c)), close),
        el("div", { class: "columns" }, conversationColumn(c), promptsColumn(c, systems), verdictColumn(c))));
      draw();
      view.scrollIntoView();
    }

    function fromHash() {
      let hash = location.hash.slice(1);
      try { hash = decodeURIComponent(hash); } catch (e) { /* a malformed %-escape: as typed */ }
      const params = new URLSearchParams(location.hash.slice(1));
      const id = params.get("case");
      const repeat = Number(params.get("repeat") || 0);
      const c = id !== null
        ? cases.find((x) => x.id === id && (x.repeat || 0) === repeat)
        : cases.find((x) => x.id === hash);  // older links: report.html#ID
      if (c) openCase(c);
    }

    if (DATA.shown > cases.length) {
      document.getElementById("case-note").textContent =
        "Only the first " + cases.length + " of " + DATA.shown + " cases are shown (failed ones first); all are in cases.jsonl.";
    }
    window.addEventListener("hashchange", fromHash);
    draw();
    fromHash();
  }

  // -- the comparison page -------------------------------------------------------------

  function factKey(f) {
    return f.text + "\u0000" + f.owner;
  }

  function flipSide(label, c, other, systems, mark) {
    if (!c) return el("div", {}, el("h3", {}, label), el("p", { class: "muted" }, "no record"));
    const keys = new Set(((other && other.facts) || []).map(factKey));
    const marks = (c.facts || []).map((f) => (keys.has(factKey(f)) ? null : mark));
    const extract = (c.stages || {}).extract;
    return el(
      "div", { class: "side" },
      el("h3", {}, label, " ", el("span", { class: "badge " + (c.passed ? "ok" : "bad") }, verdict(c))),
      c.failing && c.failing.length ? el("p", { class: "bad" }, "failing: " + c.failing.join(", ")) : null,
      c.error ? el("p", { class: "bad" }, "error: " + c.error) : null,
      el("h4", {}, "Facts"), factsTable(c.facts, marks),
      el("h4", {}, "Checks"), checksTable(c.checks),
      extract ? el("details", {}, el("summary", {}, "extraction: raw answer"), el("pre", {}, extract.raw || "")) : null,
      c.stages && c.stages.reconcile
        ? el("details", {}, el("summary", {}, "reconcile: raw answer"), el("pre", {}, c.stages.reconcile.raw || ""))
        : null,
      el("details", {}, el("summary", {}, "prompts"), promptsColumn(c, systems)),
    );
  }

  function factDiff(diff) {
    const line = (sign, cls, f) => el("div", { class: cls }, sign + " " + f.text + " (" + f.owner + ", " + f.subject + ")");
    return el("div", { class: "fact-diff" },
      el("h4", {}, "Fact-level diff (A to B)"),
      (diff.removed || []).map((f) => line("-", "fact-removed", f)),
      (diff.added || []).map((f) => line("+", "fact-added", f)),
      el("p", { class: "muted" }, (diff.kept || []).length + " facts the same in both"));
  }

  function comparePage() {
    const flips = DATA.flipped || [];
    const systems = DATA.systems || [];
    const holder = document.getElementById("flips");
    const change = el("select", { id: "f-change" },
      ["", "fixed", "broken"].map((v) => el("option", { value: v }, v || "all")));
    const search = el("input", { type: "search", id: "f-search", placeholder: "words in the case" });
    document.getElementById("flip-filters").append(
      el("label", {}, "change ", change), " ", el("label", {}, "search ", search));
    function draw() {
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      const picked = flips.filter((f) => (!change.value || f.change === change.value)
        && words.every((w) => haystack(f.b || f.a || { id: f.id }).includes(w) || f.id.toLowerCase().includes(w)));
      holder.replaceChildren(...picked.map((f) => {
        const conv = f.a || f.b;
        return el("div", { class: "flip", id: "flip-" + f.id, "data-case": f.id },
          el("h3", {}, f.id, " ", el("span", { class: "badge " + f.change }, f.change)),
          conv ? el("details", {}, el("summary", {}, "conversation"), conversationColumn(conv)) : null,
          factDiff(f.facts || {}),
          el("div", { class: "columns two" },
            flipSide("A: " + DATA.a, f.a, f.b, systems, "fact-removed"),
            flipSide("B: " + DATA.b, f.b, f.a, systems, "fact-added")));
      }));
      document.getElementById("flip-count").textContent = picked.length + " of " + flips.length + " flipped cases shown";
    }
    change.addEventListener("change", draw);
    search.addEventListener("input", draw);
    draw();
  }

  if (DATA.kind === "report") reportPage();
  else if (DATA.kind === "compare") comparePage();
})();

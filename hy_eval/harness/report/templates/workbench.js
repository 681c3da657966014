"use strict";
// The workbench pages' script (E7): reads the JSON block #hy-data and gives the parts of
// the case table, filters, search and case view as HY to the page's own part appended
// to it (report.js on report.html, compare.js on the comparison page). Every piece of dataset
// or model text goes into the page as a text node (el() below), never as HTML.
const HY = (function () {
  const DATA = JSON.parse(document.getElementById("hy-data").textContent);
  //: Rows of a case table drawn at once: the rest are a page away, so a page of a
  //: thousand cases is as quick to load and to filter as one of fifty.
  const PAGE_SIZE = 50;

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

  function button(id, label, onClick) {
    return el("button", { type: "button", id: id, onclick: onClick }, label);
  }

  function pretty(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 1);
  }

  function block(title, value) {
    if (value === null || value === undefined || value === "") return null;
    if (Array.isArray(value) && value.length === 0) return null;
    return [el("h4", {}, title), el("pre", {}, pretty(value))];
  }

  // The lang attribute for a case's own text: Chinese text marked lang="zh" is drawn
  // with Chinese glyph forms, not the Japanese ones a page in English would get.
  function textLang(c) {
    return c && /^(zh|ja|ko)/.test(c.lang || "") ? c.lang : null;
  }

  // Enter and Space act as a click on elements made focusable (rows, headers).
  function onActivate(node, action) {
    node.setAttribute("tabindex", "0");
    node.addEventListener("click", action);
    node.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); action(e); }
    });
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
      onActivate(th, () => sortTable(table, col, th));
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

  // A message's text; a tool call (no text) shows its calls, not "null".
  function messageText(m) {
    if (m.content !== null && m.content !== undefined) return pretty(m.content);
    if (m.tool_calls) return "tool calls: " + pretty(m.tool_calls);
    return "(no text)";
  }

  function messageList(messages) {
    return (messages || []).map((m) => {
      const who = m.role + (m.name ? " " + m.name : "");
      return el("div", { class: "msg " + m.role }, el("b", {}, who), messageText(m));
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

  // -- gold facts and their matches ----------------------------------------------------

  // The case's gold facts, one per fact check, each with the check's verdict and what
  // the matcher paired with it (the check's detail), in the order of the gold.
  function goldRows(c) {
    const gold = ((c.expect || {}).facts) || [];
    return (c.checks || []).filter((ch) => ch.check === "fact").map((ch, i) => {
      const d = ch.detail && typeof ch.detail === "object" ? ch.detail : {};
      return { ok: ch.ok, d: d, text: (gold[i] || {}).text || null };
    });
  }

  function goldText(row) {
    const d = row.d;
    const words = (d.keywords || []).map((k) => (Array.isArray(k) ? k.join(" | ") : k)).join(", ");
    return [el("b", {}, d.gold_subject || "?"), " (owner " + (d.gold_owner || "?") + ")",
      row.text ? el("div", {}, row.text) : null, words ? el("div", { class: "muted" }, "keywords: " + words) : null];
  }

  // Why the matcher and the checks decided as they did, in words.
  function reason(row) {
    const d = row.d;
    if (d.matched === null || d.matched === undefined) return "no prediction matched (recall)";
    const parts = [];
    parts.push(d.subject_ok ? "subject right" : "subject wrong: " + d.predicted_subject + " for " + d.gold_subject);
    parts.push(d.owner_ok === false ? "owner wrong: " + d.owner + " for " + d.gold_owner : "owner right");
    if (d.match) parts.push("matcher: " + JSON.stringify(d.match));
    return parts.join("; ");
  }

  function matchCell(row) {
    if (!row) return el("td", { class: "muted" }, "no check");
    const d = row.d;
    return el("td", { class: "match" },
      el("span", { class: "badge " + (row.ok ? "ok" : "bad") }, row.ok ? "ok" : "FAIL"), " ",
      d.matched === null || d.matched === undefined ? el("i", {}, "missing") : d.text,
      el("div", { class: "muted" }, reason(row)));
  }

  function goldTable(c) {
    const rows = goldRows(c);
    if (!rows.length) return el("p", { class: "muted" }, "No gold facts.");
    return el("table", { class: "gold" },
      el("tr", {}, el("th", {}, "gold fact"), el("th", {}, "matched prediction, verdict and reason")),
      rows.map((row) => el("tr", {}, el("td", {}, goldText(row)), matchCell(row))));
  }

  // The rest of the gold (absent facts, profile, untouched memories), one line an item.
  function goldOther(c) {
    const e = c.expect || {};
    const lines = [];
    for (const key of ["absent", "profile", "untouched", "operations"]) {
      const value = e[key];
      if (value === null || value === undefined || (typeof value === "object" && !Object.keys(value).length)) continue;
      const items = Array.isArray(value) ? value : [value];
      items.forEach((item) => lines.push(key + ": " + JSON.stringify(item)));
    }
    return lines.length ? el("details", { class: "gold-other" }, el("summary", {}, "other gold (absent, profile, untouched)"), el("pre", {}, lines.join("\n"))) : null;
  }

  function verdictColumn(c) {
    return el(
      "div", {},
      el("h3", {}, "Facts and verdicts"),
      el("h4", {}, "Gold facts"), goldTable(c), goldOther(c),
      el("h4", {}, "Extracted facts"), factsTable(c.facts),
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

  // -- the case list: filters, paged table, case view ----------------------------------

  function caseHash(c) {
    return "#case=" + encodeURIComponent(c.id) + (c.repeat ? "&repeat=" + c.repeat : "");
  }

  function haystack(c, parts) {
    if (c._text === undefined) c._text = JSON.stringify(parts(c)).toLowerCase();
    return c._text;
  }

  // Selects (key, label, values of a case) and a search box in #filters; returns
  // matches(c), true when a case passes them all.
  function filterControls(cases, filters, text, onChange) {
    const form = document.getElementById("filters");
    const selects = {};
    for (const [key, label, values, order] of filters) {
      const seen = new Map();
      cases.forEach((c) => values(c).forEach((v) => seen.set(String(v), (seen.get(String(v)) || 0) + 1)));
      // A filter with a fixed order lists every value, those no case has with (0).
      const names = order || Array.from(seen.keys()).sort();
      const select = el("select", { id: "f-" + key, name: key },
        el("option", { value: "" }, "all"),
        names.map((v) => el("option", { value: v, "data-n": seen.get(v) || 0 }, v + " (" + (seen.get(v) || 0) + ")")));
      select.addEventListener("change", onChange);
      selects[key] = select;
      form.append(el("label", {}, label, select));
    }
    const search = el("input", { type: "search", id: "f-search", placeholder: "words in the case" });
    search.addEventListener("input", onChange);
    form.append(el("label", {}, "search", search));
    // The search text of every case, made after the page is drawn, so typing finds it ready.
    setTimeout(() => cases.forEach((c) => haystack(c, text)), 0);
    const matches = function (c) {
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      return filters.every(([key, , values]) => !selects[key].value || values(c).map(String).includes(selects[key].value))
        && words.every((w) => haystack(c, text).includes(w));
    };
    return { matches: matches, selects: selects, search: search };
  }

  // ArrowDown and ArrowUp on a row focus the next or previous one; past the edge of the
  // rows drawn, onEdge(1 or -1) turns the page.
  function arrowKeys(tr, onEdge) {
    tr.addEventListener("keydown", (e) => {
      if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
      e.preventDefault();
      const down = e.key === "ArrowDown";
      const next = down ? tr.nextElementSibling : tr.previousElementSibling;
      if (next) next.focus();
      else onEdge(down ? 1 : -1);
    });
  }

  // The pager under a case table: previous, "page N of M", next; go(page) turns to page.
  function pagerButtons(pager, page, pages, go) {
    pager.replaceChildren(
      el("button", { type: "button", id: "page-prev", disabled: page === 0 ? "" : null, onclick: () => go(page - 1) }, "previous page"),
      el("span", { id: "page-of" }, " page " + (page + 1) + " of " + pages + " "),
      el("button", { type: "button", id: "page-next", disabled: page >= pages - 1 ? "" : null, onclick: () => go(page + 1) }, "next page"));
  }

  // The case table of #case-table, PAGE_SIZE rows at a time with #pager below it.
  // columns: [name, value of a case, class of its cell]; onOpen(c) opens a case.
  function listView(columns, onOpen) {
    const table = document.getElementById("case-table");
    const pager = document.getElementById("pager");
    //: rows: the drawn rows by case, so a closed case's row can take the focus back.
    const state = { items: [], page: 0, sort: null, dir: 1, open: null, rows: new Map() };
    table.tHead.append(el("tr", {}, columns.map(([name], i) => {
      const th = el("th", {}, name);
      onActivate(th, () => {
        state.dir = state.sort === i ? -state.dir : 1;
        state.sort = i;
        for (const h of table.tHead.rows[0].cells) h.removeAttribute("aria-sort");
        th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
        sort();
        draw();
      });
      return th;
    })));

    function sort() {
      if (state.sort === null) return;
      const get = columns[state.sort][1];
      state.items.sort((a, b) => {
        const x = get(a), y = get(b);
        return state.dir * (typeof x === "number" ? x - y : String(x).localeCompare(String(y)));
      });
    }

    function row(c) {
      const tr = el("tr", { "data-case": c.id, class: c === state.open ? "open" : null },
        columns.map(([, get, cls]) => el("td", { class: cls ? cls(c) : null }, get(c))));
      onActivate(tr, () => onOpen(c));
      arrowKeys(tr, turnPage);
      state.rows.set(c, tr);
      return tr;
    }

    // The arrow keys go on past the page's edge: the next page's first row, or the
    // previous page's last one.
    function turnPage(by) {
      const page = state.page + by;
      if (page < 0 || page * PAGE_SIZE >= state.items.length) return;
      state.page = page;
      draw();
      const body = table.tBodies[0];
      (by > 0 ? body.firstElementChild : body.lastElementChild).focus();
    }

    function draw() {
      const pages = Math.max(1, Math.ceil(state.items.length / PAGE_SIZE));
      state.page = Math.min(state.page, pages - 1);
      const start = state.page * PAGE_SIZE;
      state.rows = new Map();
      table.tBodies[0].replaceChildren(...state.items.slice(start, start + PAGE_SIZE).map(row));
      pagerButtons(pager, state.page, pages, (page) => { state.page = page; draw(); });
    }

    return {
      set(items) { state.items = items; state.page = 0; sort(); draw(); },
      items() { return state.items; },
      open(c) {
        state.open = c;
        const at = state.items.indexOf(c);
        if (at >= 0) state.page = Math.floor(at / PAGE_SIZE);
        draw();
      },
      // Focus the row of case c if it is on the page drawn; false if it is not.
      focus(c) {
        const tr = state.rows.get(c);
        if (tr) tr.focus();
        return Boolean(tr);
      },
    };
  }

  // The case view in #case-view, above the table: panel(c, controls) draws a case;
  // previous/next step through the listed cases. The address names the open case, so
  // Back closes the view and a link opens it. Opening a case moves the keyboard focus to
  // its heading; closing it (close, Escape, Back) gives it back to the case's row when
  // that row is on the page shown.
  function caseViewer(list, panel, find) {
    const view = document.getElementById("case-view");
    // The address a closed view leaves: the section holding the case table (#cases on
    // a report, #changed-cases on the comparison page).
    const home = "#" + view.closest("section").id;
    let open = null;
    function close() {
      const was = open;
      open = null;
      view.replaceChildren();
      list.open(null);
      if (was) list.focus(was);
    }
    // The heading of the case shown takes the focus, or the previous/next button that
    // had it, so stepping with the keyboard goes on from where it was.
    function focusIn(keep) {
      const again = keep ? view.querySelector("#" + keep) : null;
      if (again && !again.disabled) { again.focus(); return; }
      const head = view.querySelector("h3");
      head.setAttribute("tabindex", "-1");
      head.focus();
    }
    function step(by) {
      const items = list.items();
      const next = items[items.indexOf(open) + by];
      if (next) { history.replaceState(null, "", caseHash(next)); show(next); }
    }
    function show(c) {
      const focused = document.activeElement;
      const keep = focused && view.contains(focused) && focused.id ? focused.id : null;
      open = c;
      const items = list.items();
      const at = items.indexOf(c);
      const controls = el("div", { class: "view-nav" },
        button("prev-case", "previous", () => step(-1)), " ",
        button("next-case", "next", () => step(1)), " ",
        button("close-case", "close", () => { history.replaceState(null, "", home); close(); }),
        el("span", { class: "muted" }, at >= 0 ? " " + (at + 1) + " of " + items.length : " not in the list as filtered"));
      if (at <= 0) controls.querySelector("#prev-case").disabled = true;
      if (at < 0 || at >= items.length - 1) controls.querySelector("#next-case").disabled = true;
      view.replaceChildren(panel(c, controls));
      list.open(c);
      view.scrollIntoView();
      focusIn(keep);
    }
    function fromHash() {
      const params = new URLSearchParams(location.hash.slice(1));
      const c = find(params);
      if (c) show(c);
      else close();
      return params;
    }
    document.addEventListener("keydown", (e) => {
      if (!open || ["INPUT", "SELECT", "TEXTAREA"].includes(e.target.tagName)) return;
      if (e.key === "Escape") { history.replaceState(null, "", home); close(); }
    });
    window.addEventListener("hashchange", fromHash);
    return { show: show, fromHash: fromHash, close: close, isOpen: () => open !== null };
  }

  // A relative link back to a comparison page (the back= of the address): only a plain
  // relative path to an .html page is followed, never a scheme.
  function backLink(params) {
    const back = params.get("back");
    if (!back || /[:\\]/.test(back) || back.startsWith("//") || !/\.html(#.*)?$/.test(back)) return null;
    return el("a", { href: back, id: "back-link" }, "back to the comparison");
  }

  return {
    DATA, el, button, pretty, block, textLang, onActivate, verdict, systemText, messageList,
    conversationColumn, promptsColumn, factsTable, checksTable, goldRows, goldText, matchCell,
    goldOther, verdictColumn, badges, caseHash, filterControls, listView, caseViewer, backLink,
  };
})();

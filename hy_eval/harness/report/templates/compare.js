// The comparison page's part of the script (appended to workbench.js, whose parts it
// takes from HY): the changed cases, grouped and filtered by what changed, in a paged
// table, and the case view with the gold facts beside A's and B's matched predictions,
// every check's verdict in both runs and the prompts' differences.
(function () {
  const { DATA, el, pretty, block, textLang, verdict, systemText, messageList } = HY;
  if (DATA.kind !== "compare") return;
  const cases = DATA.changed || [];
  const systems = DATA.systems || [];
  const links = DATA.links || {};
  //: The order of the "what changed" names: facts first, the better outcome first.
  const KINDS = ["fact found", "fact lost", "subject right", "subject wrong", "owner right",
    "owner wrong", "absent fixed", "absent broken", "merge fixed", "merge broken",
    "profile fixed", "profile broken", "other fixed", "other broken"];
  const CHANGES = ["flipped", "fixed", "broken", "same verdict"];

  function changeOf(c) {
    return c.change ? ["flipped", c.change] : ["same verdict"];
  }

  function reportLink(side, c) {
    const back = links["back_" + side] + HY.caseHash(c);
    const href = links[side] + HY.caseHash(c) + "&back=" + encodeURIComponent(back);
    return el("a", { href: href, id: "report-link-" + side }, side.toUpperCase() + "'s report");
  }

  // -- line diff of two prompts --------------------------------------------------------

  // The lines of a and b as [op, line] ("=", "-" or "+") by a longest common subsequence.
  function lineDiff(a, b) {
    const x = a.split("\n"), y = b.split("\n");
    if (x.length * y.length > 4e6) return null;  // too long to diff here: shown whole
    const n = x.length, m = y.length;
    const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    const out = [];
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { out.push(["=", x[i]]); i++; j++; }
      else if (j < m && (i >= n || lcs[i][j + 1] >= lcs[i + 1][j])) { out.push(["+", y[j]]); j++; }
      else { out.push(["-", x[i]]); i++; }
    }
    return out;
  }

  // A diff as one block: changed lines marked, long unchanged stretches folded.
  function diffBlock(a, b) {
    const ops = lineDiff(a, b);
    if (ops === null) return [el("h5", {}, "A"), el("pre", {}, a), el("h5", {}, "B"), el("pre", {}, b)];
    const keep = ops.map((op, k) => ops.slice(Math.max(0, k - 2), k + 3).some((o) => o[0] !== "="));
    const lines = [];
    for (let k = 0; k < ops.length; k++) {
      if (keep[k]) {
        const [op, line] = ops[k];
        lines.push(el("span", { class: op === "+" ? "add" : op === "-" ? "del" : null }, op === "=" ? "  " + line : op + " " + line));
      } else {
        let end = k;
        while (end < ops.length && !keep[end]) end++;
        lines.push(el("span", { class: "gap" }, "... " + (end - k) + " lines the same ..."));
        k = end - 1;
      }
    }
    return el("pre", { class: "diff" }, lines);
  }

  function promptSection(c) {
    const a = c.a || {}, b = c.b || {};
    const names = Array.from(new Set([...Object.keys(a.stages || {}), ...Object.keys(b.stages || {})]));
    return names.map((name) => {
      const sa = (a.stages || {})[name] || {}, sb = (b.stages || {})[name] || {};
      const sysA = systemText(sa, systems) || "", sysB = systemText(sb, systems) || "";
      const userB = sb.same_user ? sa.user : sb.user;
      const part = (title, x, y) => (x === y
        ? el("details", {}, el("summary", {}, title + ": the same in A and B"), el("pre", {}, x || ""))
        : el("details", { open: "" }, el("summary", {}, title + ": differs (- A, + B)"), diffBlock(x || "", y || "")));
      return el("div", { class: "stage" },
        el("h4", {}, name + " (A " + (sa.template || "none") + ", B " + (sb.template || "none") + ")"),
        part("system prompt", sysA, sysB),
        part("prompt", sa.user || "", userB || ""),
        el("div", { class: "columns two" },
          el("div", {}, el("h5", {}, "A's raw answer"), el("pre", {}, sa.raw || "")),
          el("div", {}, el("h5", {}, "B's raw answer"), el("pre", {}, sb.raw || ""))));
    });
  }

  // -- gold and checks aligned ---------------------------------------------------------

  function keyed(checks) {
    const seen = {}, out = {};
    for (const ch of checks || []) {
      const n = seen[ch.check] || 0;
      seen[ch.check] = n + 1;
      out[ch.check + "#" + n] = ch;
    }
    return out;
  }

  function goldAligned(c) {
    const ga = HY.goldRows(c.a || {}), gb = HY.goldRows(c.b || {});
    const changed = new Set(c.keys || []);
    const rows = [];
    for (let i = 0; i < Math.max(ga.length, gb.length); i++) {
      rows.push(el("tr", { class: changed.has("fact#" + i) ? "changed-row" : null },
        el("td", {}, HY.goldText(ga[i] || gb[i])), HY.matchCell(ga[i]), HY.matchCell(gb[i])));
    }
    if (!rows.length) return el("p", { class: "muted" }, "No gold facts.");
    return el("table", { class: "gold", id: "gold-table" },
      el("tr", {}, el("th", {}, "gold fact"), el("th", {}, "A: matched prediction"), el("th", {}, "B: matched prediction")),
      rows);
  }

  function checksAligned(c) {
    const ka = keyed((c.a || {}).checks), kb = keyed((c.b || {}).checks);
    const changed = new Set(c.keys || []);
    const keys = Array.from(new Set([...Object.keys(ka), ...Object.keys(kb)])).filter((k) => !k.startsWith("fact#"));
    const cell = (ch) => (ch
      ? [el("td", { class: ch.ok ? "ok" : "bad" }, ch.ok ? "ok" : "FAIL"), el("td", {}, el("pre", {}, pretty(ch.detail)))]
      : [el("td", { class: "muted" }, "none"), el("td", {})]);
    return el("table", { class: "checks", id: "checks-table" },
      el("tr", {}, el("th", {}, "check"), el("th", {}, "A"), el("th", {}, "A's detail"), el("th", {}, "B"), el("th", {}, "B's detail")),
      keys.map((k) => el("tr", { class: changed.has(k) ? "changed-row" : null }, el("td", {}, k), cell(ka[k]), cell(kb[k]))));
  }

  function factKey(f) {
    return f.text + "\u0000" + f.owner;
  }

  function factDiff(c) {
    const fa = (c.a || {}).facts || [], fb = (c.b || {}).facts || [];
    const ka = new Set(fa.map(factKey)), kb = new Set(fb.map(factKey));
    const line = (sign, cls, f) => el("div", { class: cls }, sign + " " + f.text + " (" + f.owner + ", " + f.subject + ")");
    return el("div", { class: "fact-diff" },
      fa.filter((f) => !kb.has(factKey(f))).map((f) => line("-", "fact-removed", f)),
      fb.filter((f) => !ka.has(factKey(f))).map((f) => line("+", "fact-added", f)),
      el("p", { class: "muted" }, fb.filter((f) => ka.has(factKey(f))).length + " extracted facts the same in both"));
  }

  function panel(c, controls) {
    const a = c.a || {}, b = c.b || {};
    const conv = a.input ? a : b;
    return el("div", { class: "view", id: "case-panel" },
      el("div", { class: "view-head" },
        el("h3", {}, "Case " + c.id, " ",
          el("span", { class: "badge " + (a.passed ? "ok" : "bad") }, "A " + verdict(a)), " ",
          el("span", { class: "badge " + (b.passed ? "ok" : "bad") }, "B " + verdict(b)), " ",
          c.change ? el("span", { class: "badge " + c.change }, c.change) : null),
        el("div", {}, reportLink("a", c), " ", reportLink("b", c), " ", controls)),
      el("p", {}, "What changed: " + (c.kinds || []).join(", ") + " (checks " + (c.keys || []).join(", ") + ")."),
      el("div", { lang: textLang(c) },
        el("h4", {}, "Gold facts and each run's match"), goldAligned(c), HY.goldOther(a),
        el("h4", {}, "Other checks"), checksAligned(c),
        el("h4", {}, "Extracted facts, A to B"), factDiff(c),
        c.diff ? el("details", {}, el("summary", {}, "structural diff of the outputs"), el("pre", {}, pretty(c.diff))) : null,
        el("h4", {}, "Prompts and raw answers"), promptSection(c),
        el("details", {}, el("summary", {}, "conversation"), messageList((conv.input || {}).messages),
          block("Existing memories", (conv.input || {}).existing)),
        b.same_input ? null : el("details", {}, el("summary", {}, "B's conversation (differs)"), messageList((b.input || {}).messages))));
  }

  // -- the page ------------------------------------------------------------------------

  const text = (c) => [c.id, (c.a || {}).input, (c.a || {}).facts, (c.b || {}).facts,
    (c.a || {}).expect, c.tags, c.kinds];
  const filters = HY.filterControls(cases, [
    ["change", "verdict change", changeOf, CHANGES],
    ["kind", "what changed", (c) => c.kinds || [], KINDS],
    ["lang", "language", (c) => [c.lang]],
    ["rule", "rule", (c) => c.rules || []],
    ["tag", "tag", (c) => c.tags || []],
    // A case is listed under a problem either run has (its A and B badges tell which).
    ["problem", "problem in A or B", (c) => Array.from(new Set([...((c.a || {}).problems || []), ...((c.b || {}).problems || [])]))],
  ], text, () => update());
  const list = HY.listView([
    ["id", (c) => c.id, () => "id"], ["lang", (c) => c.lang],
    ["A", (c) => verdict(c.a || {}), (c) => ((c.a || {}).passed ? "ok" : "bad")],
    ["B", (c) => verdict(c.b || {}), (c) => ((c.b || {}).passed ? "ok" : "bad")],
    ["change", (c) => c.change || "same verdict"],
    ["what changed", (c) => (c.kinds || []).join(", "), () => "words"],
    ["rules", (c) => (c.rules || []).join(" "), () => "words"],
    ["tags", (c) => (c.tags || []).join(" "), () => "words"],
  ], (c) => { location.hash = HY.caseHash(c); });
  const viewer = HY.caseViewer(list, panel, (params) => {
    const id = params.get("case");
    return id === null ? null : cases.find((x) => x.id === id);
  });

  // One button per kind of change with its count; pressing one filters to it.
  function kindButtons() {
    const select = filters.selects.kind;
    const holder = document.getElementById("kinds");
    holder.append(el("span", { class: "muted" }, "What changed: "));
    for (const option of Array.from(select.options).slice(1).filter((o) => o.dataset.n !== "0")) {
      const b = el("button", { type: "button", "data-kind": option.value, "aria-pressed": "false" }, option.textContent);
      b.addEventListener("click", () => {
        select.value = select.value === option.value ? "" : option.value;
        update();
      });
      holder.append(b);
    }
  }

  function update() {
    const picked = cases.filter(filters.matches);
    list.set(picked);
    for (const b of document.querySelectorAll("#kinds button")) {
      b.setAttribute("aria-pressed", String(b.dataset.kind === filters.selects.kind.value));
    }
    document.getElementById("case-count").textContent = picked.length + " of " + cases.length +
      " changed cases shown (" + DATA.flips_total + " flipped)";
  }

  kindButtons();
  update();
  viewer.fromHash();
})();

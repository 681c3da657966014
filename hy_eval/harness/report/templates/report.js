// report.html's part of the script (appended to workbench.js, whose parts it takes from
// HY): the run's cases in a paged table with filters and search, and the case view with
// the conversation, the prompts and raw answers, and the gold facts beside what matched
// them. A link from a comparison page (#case=ID&back=...) opens the case with the way
// back beside it.
(function () {
  const { DATA, el, filterControls, listView, caseViewer, caseHash, backLink, verdict, badges,
    textLang, conversationColumn, promptsColumn, verdictColumn } = HY;
  if (DATA.kind !== "report") return;
  const cases = DATA.cases || [];
  const systems = DATA.systems || [];
  let back = null;
  const note = document.getElementById("case-note");
  const text = (c) => [c.id, c.input, c.rendered,
    Object.values(c.stages || {}).map((s) => [s.user, s.raw]), c.facts, c.error, c.tags];
  const filters = filterControls(cases, [
    ["lang", "language", (c) => [c.lang]],
    ["rule", "rule", (c) => c.rules || []],
    ["tag", "tag", (c) => c.tags || []],
    ["verdict", "verdict", (c) => [verdict(c)]],
    ["check", "failing check", (c) => c.failing || []],
    ["problem", "problem", (c) => c.problems || []],
  ], text, () => update());
  const list = listView([
    ["id", (c) => c.id, () => "id"], ["repeat", (c) => c.repeat], ["lang", (c) => c.lang],
    ["rules", (c) => (c.rules || []).join(" "), () => "words"], ["tags", (c) => (c.tags || []).join(" "), () => "words"],
    ["verdict", verdict, (c) => (c.passed ? "ok" : "bad")],
    ["problems", (c) => (c.problems || []).join(" "), () => "words"],
  ], (c) => { location.hash = caseHash(c); });
  const viewer = caseViewer(list, (c, controls) => el("div", { class: "view", id: "case-panel" },
    el("div", { class: "view-head" },
      el("h3", {}, "Case " + c.id + (c.repeat ? " (repeat " + c.repeat + ")" : ""), " ", badges(c)),
      el("div", {}, back, " ", controls)),
    el("div", { class: "columns", lang: textLang(c) },
      conversationColumn(c), promptsColumn(c, systems), verdictColumn(c))),
  (params) => {
    back = backLink(params);
    const id = params.get("case");
    const repeat = Number(params.get("repeat") || 0);
    const c = id === null ? null : cases.find((x) => x.id === id && (x.repeat || 0) === repeat);
    // A case not on the page (a link from another page): say so, with the way back
    // to the page the link came from, since no case view opens to hold that link.
    const missing = ["Case " + id + " is not among the cases of this page. ", back];
    note.replaceChildren(...(c || id === null ? [shownNote()] : missing.filter(Boolean)));
    return c;
  });

  function update() {
    const picked = cases.filter(filters.matches);
    list.set(picked);
    document.getElementById("case-count").textContent =
      picked.length + " of " + cases.length + " cases shown";
  }

  // What the note says while no missing case is named: how many cases the page holds.
  function shownNote() {
    return DATA.shown > cases.length
      ? "Only the first " + cases.length + " of " + DATA.shown + " cases are shown (failed ones first); all are in cases.jsonl."
      : "";
  }

  note.replaceChildren(shownNote());
  update();
  viewer.fromHash();
})();

"""report.html and the comparison page in a real browser (E7): headless Chromium from
the Debian package (.ci/run installs it), driven by Playwright for Python with
``executable_path`` set, so no browser is ever downloaded.

Two scripted runs of ten real cases (five English, five Chinese) give a report and a
comparison with flipped cases; the hostile-input corpus (its run is the
session fixture of tests/conftest.py) is shown on both pages, every case opened,
and must stay text. Screenshots of both pages are saved in the test's folder.
"""

import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from hy_eval.harness import Runner, load_suite
from hy_eval.harness.analysis import compare
from hy_eval.harness.analysis import run_outcomes as load_outcomes
from hy_eval.harness.report import write_compare_page
from tests.harness.scripted_suite import SuiteModel, perfect_extraction, scripted_config

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and not os.environ.get("CI"):
    pytest.skip("needs the chromium package (.ci/run installs it)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

#: A page's script must be done well within this (ms); each test is bounded by it.
TIMEOUT_MS = 5000


def write_small_suite(folder):
    """Five English and five Chinese cases of the shipped suite, each with gold facts."""
    source = load_suite("multi_speaker")
    picked = []
    for lang in ("en", "zh"):
        picked += [c for c in source.cases if c.lang == lang and c.expect.facts][:5]
    folder.mkdir(parents=True)
    (folder / "small.jsonl").write_text(
        "".join(c.model_dump_json(exclude_none=True) + "\n" for c in picked), encoding="utf-8"
    )
    return load_suite(str(folder))


def scripted_run(suite, folder, out, emptied=()):
    """A run whose model answers each case's gold facts, none for the cases in ``emptied``."""
    answers = {c.id: perfect_extraction(c) for c in suite.cases}
    for case_id in emptied:
        answers[case_id] = {"facts": [], "basic_info": {}}
    with SuiteModel(suite.cases, answers) as model:
        cfg = scripted_config(model.server, out, suite=str(folder))
        run_dir, _, code = Runner(cfg).run()
    assert code == 0
    return run_dir


def records_of(run_dir):
    text = (Path(run_dir) / "cases.jsonl").read_text("utf-8")
    return {r["id"]: r for r in (json.loads(x) for x in text.split("\n") if x)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run A (gold answers) and run B (two passing cases of A answered with no facts), and
    the comparison page of B against A."""
    tmp = tmp_path_factory.mktemp("pages")
    suite = write_small_suite(tmp / "suite")
    run_a = scripted_run(suite, tmp / "suite", tmp / "a")
    passing = [r for r in records_of(run_a).values() if r["score"]["passed"]]
    broken = [next(r["id"] for r in passing if r["lang"] == lang) for lang in ("en", "zh")]
    run_b = scripted_run(suite, tmp / "suite", tmp / "b", emptied=broken)
    result = compare(load_outcomes(run_a), load_outcomes(run_b))
    page = write_compare_page(tmp / "compare.html", result, run_a, run_b)
    return {"a": run_a, "b": run_b, "broken": broken, "result": result, "compare": page}


def launched_chromium():
    """Headless Chromium, closed when the generator is (a module fixture's body)."""
    with sync_api.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def chromium(runs, hostile_run):
    """One Chromium for the module's tests (a launch costs seconds). Playwright's sync API
    keeps an event loop running while it is open, so the runs (``asyncio.run``) must all be
    made before it: it asks for both, and closes when the module's last test is done. A
    module that borrows :func:`browser` defines its own ``chromium`` the same way."""
    yield from launched_chromium()


@pytest.fixture
def browser(chromium):
    """The module's Chromium for one test: each page the test opens has a browser context
    of its own (``new_page``), closed when the test ends, so no test sees another's pages,
    storage or address."""
    yield chromium
    for context in chromium.contexts:
        context.close()


class Opened:
    """A page opened from disk, with what it logged, asked for and popped up."""

    def __init__(self, browser, path):
        self.url = Path(path).resolve().as_uri()
        self.errors, self.requests, self.dialogs = [], [], []
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.page.set_default_timeout(TIMEOUT_MS)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)
        self.page.on("request", self._request)
        self.page.goto(self.url)

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _request(self, request):
        if request.url != self.url and not request.url.startswith("data:"):
            self.requests.append(request.url)

    def rows(self, table="#case-table"):
        return self.page.eval_on_selector_all(
            f"{table} tbody tr", "rows => rows.map(r => r.dataset.case)"
        )

    def assert_inert(self):
        """Nothing from the data became markup or ran: no dialog, error or request, no
        element or attribute the templates do not write."""
        page = self.page
        assert self.errors == [] and self.dialogs == [] and self.requests == []
        assert page.title().startswith("hy_eval: ") and "pwned" not in page.title()
        assert page.locator("script").count() == 2
        handlers = page.evaluate(
            "() => [...document.querySelectorAll('*')].flatMap(e => [...e.attributes]"
            ".filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))"
        )
        assert handlers == []
        # Pages are as wide as the window: a 60,000-character word wraps.
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400


def test_report_page_loads_without_console_errors(runs, browser, tmp_path):
    """The page opens from disk, with no error and no request (how fast: see
    benchmarks/bench_pages.py)."""
    opened = Opened(browser, runs["a"] / "report.html")
    page = opened.page
    assert page.locator("#metric-table tbody tr").count() >= 10
    assert page.locator("#plots img").count() == 3
    assert len(opened.rows()) == 10
    assert page.text_content("#case-count") == "10 of 10 cases shown"
    opened.assert_inert()
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_filtering_to_zh_shows_exactly_the_chinese_cases(runs, browser):
    """lang=zh keeps the Chinese cases and only them; other filters combine."""
    records = records_of(runs["a"])
    opened = Opened(browser, runs["a"] / "report.html")
    opened.page.select_option("#f-lang", "zh")
    zh = sorted(i for i, r in records.items() if r["lang"] == "zh")
    assert len(zh) == 5 and sorted(opened.rows()) == zh
    opened.page.select_option("#f-verdict", "pass")
    assert sorted(opened.rows()) == sorted(i for i in zh if records[i]["score"]["passed"])
    opened.page.select_option("#f-lang", "en")
    assert all(records[i]["lang"] == "en" for i in opened.rows())
    assert opened.errors == []


def test_failing_check_and_verdict_filters_find_the_broken_cases(runs, browser):
    """In run B the two cases answered with no facts fail their fact checks."""
    opened = Opened(browser, runs["b"] / "report.html")
    opened.page.select_option("#f-check", "fact")
    assert sorted(opened.rows()) == sorted(runs["broken"])
    opened.page.select_option("#f-check", "")
    opened.page.select_option("#f-verdict", "fail")
    assert set(runs["broken"]) <= set(opened.rows())


def unique_word(records):
    """An English case and a word of its conversation that no other case's record holds."""
    for case_id in sorted(i for i, r in records.items() if r["lang"] == "en"):
        messages = records[case_id]["input"]["messages"]
        text = " ".join(m["content"] for m in messages if isinstance(m.get("content"), str))
        others = " ".join(
            json.dumps(r, ensure_ascii=False) for i, r in records.items() if i != case_id
        ).lower()
        for word in re.findall(r"[A-Za-z]{5,}", text):
            if word.lower() not in others:
                return case_id, word
    raise AssertionError("no English case has a word of its own")


def test_search_finds_a_case_by_a_word_of_its_conversation(runs, browser):
    """Typing a word of one case's conversation leaves that case alone."""
    case_id, word = unique_word(records_of(runs["a"]))
    opened = Opened(browser, runs["a"] / "report.html")
    opened.page.fill("#f-search", word.upper())  # case-insensitive
    assert opened.rows() == [case_id]
    opened.page.fill("#f-search", "")
    assert len(opened.rows()) == 10


def test_a_case_view_opens_with_conversation_prompts_answers_and_verdicts(runs, browser):
    """Clicking a row opens its view; the address names the case."""
    records = records_of(runs["b"])
    case_id = runs["broken"][1]  # a Chinese case that failed
    opened = Opened(browser, runs["b"] / "report.html")
    page = opened.page
    page.click(f'#case-table tbody tr[data-case="{case_id}"]')
    panel = page.locator("#case-panel")
    panel.wait_for()
    text = panel.inner_text()
    rec = records[case_id]
    assert f"Case {case_id}" in text
    assert rec["input"]["messages"][0]["content"].strip().splitlines()[0] in text
    assert rec["stages"]["extract"]["raw"] in text  # the raw answer
    assert "FAIL" in text and "Facts and verdicts" in text
    assert page.evaluate("location.hash") == f"#case={case_id}"
    page.click("#close-case")
    assert page.locator("#case-panel").count() == 0
    # The address opens the case again (a link from matrix.md or a colleague).
    page.goto(opened.url + f"#case={case_id}")
    page.locator("#case-panel").wait_for()
    assert opened.errors == []


def test_breakdown_tables_sort_by_a_column(runs, browser):
    opened = Opened(browser, runs["b"] / "report.html")
    page = opened.page
    header = page.locator("#breakdown-rule th", has_text="case_pass")
    header.click()
    values = page.eval_on_selector_all(
        "#breakdown-rule tbody tr", "rows => rows.map(r => Number(r.cells[2].dataset.v))"
    )
    assert values == sorted(values) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    values = page.eval_on_selector_all(
        "#breakdown-rule tbody tr", "rows => rows.map(r => Number(r.cells[2].dataset.v))"
    )
    assert values == sorted(values, reverse=True)


def test_the_compare_page_shows_the_flipped_cases_side_by_side(runs, browser, tmp_path):
    """Each changed case listed; a flipped one opens with A and B side by side: the gold
    facts beside each run's match, and the facts only A had marked as removed."""
    opened = Opened(browser, runs["compare"])
    page = opened.page
    page.select_option("#f-change", "flipped")
    assert sorted(opened.rows()) == sorted(runs["broken"])
    assert [f.id for f in runs["result"].flipped] == sorted(opened.rows())
    page.click(f'#case-table tbody tr[data-case="{runs["broken"][0]}"]')
    panel = page.locator("#case-panel")
    assert "broken" in panel.inner_text() and "A pass" in panel.inner_text()
    assert panel.locator("#gold-table tr.changed-row").count() >= 1
    assert "no prediction matched (recall)" in panel.locator("#gold-table").inner_text()
    removed = panel.locator(".fact-diff .fact-removed")
    assert removed.count() >= 1 and removed.first.inner_text().startswith("- ")
    assert page.locator("#diff-table tbody tr").count() >= 10
    mcnemar = page.inner_text("#mcnemar")
    assert "flipped (pass/fail verdict changed): 2 cases, 0 fixed by B, 2 broken by B" in mcnemar
    page.select_option("#f-change", "fixed")
    assert opened.rows() == []
    opened.assert_inert()
    page.select_option("#f-change", "")
    page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    assert (tmp_path / "compare.png").stat().st_size > 10_000


def active(page):
    """What has the keyboard focus: the case of a row, else the tag and text."""
    return page.evaluate(
        "() => { const a = document.activeElement;"
        " return a.dataset.case ? 'row ' + a.dataset.case : a.tagName + ' ' + a.textContent; }"
    )


def test_the_focus_moves_into_an_opened_case_and_back_to_its_row(runs, browser):
    """Enter on a row puts the focus on the case's heading (not on the page's body, as
    when the redrawn table dropped the focused row); Escape, the close button and Back
    each give it back to the row. Previous and next keep it on the button pressed."""
    opened = Opened(browser, runs["a"] / "report.html")
    page = opened.page
    rows = opened.rows()
    for close in ("Escape", "button", "Back"):
        page.focus(f'#case-table tbody tr[data-case="{rows[2]}"]')
        page.keyboard.press("Enter")
        page.locator("#case-panel").wait_for()
        assert active(page).startswith(f"H3 Case {rows[2]}"), close
        if close == "Escape":
            page.keyboard.press("Escape")
        elif close == "button":
            page.click("#close-case")
        else:
            page.go_back()
            page.wait_for_function("() => !document.getElementById('case-panel')")
        assert page.locator("#case-panel").count() == 0
        assert active(page) == f"row {rows[2]}", close
    assert page.evaluate("location.hash") == "#cases"  # the section of the case table
    page.focus(f'#case-table tbody tr[data-case="{rows[2]}"]')
    page.keyboard.press("Enter")
    page.focus("#next-case")
    page.keyboard.press("Enter")
    assert page.inner_text("#case-panel h3").startswith(f"Case {rows[3]}")
    assert active(page) == "BUTTON next"
    assert opened.errors == []


def test_closing_a_case_on_the_compare_page_leaves_its_own_section_in_the_address(runs, browser):
    """The comparison page's case table is in #changed-cases (it has no #cases)."""
    opened = Opened(browser, runs["compare"])
    page = opened.page
    case_id = opened.rows()[0]
    page.focus(f'#case-table tbody tr[data-case="{case_id}"]')
    page.keyboard.press("Enter")
    page.locator("#case-panel").wait_for()
    page.keyboard.press("Escape")
    assert page.evaluate("location.hash") == "#changed-cases"
    assert active(page) == f"row {case_id}"
    page.click(f'#case-table tbody tr[data-case="{case_id}"]')
    page.click("#close-case")
    assert page.evaluate("location.hash") == "#changed-cases"
    assert opened.errors == []


def test_a_link_to_a_case_not_on_the_report_says_so_and_leads_back(runs, browser):
    """A comparison page links to a case its report does not hold (a report keeps at most
    DRILLDOWN_LIMIT cases): the report says so, with the link back beside it."""
    case_id = runs["broken"][0]
    back = Path(os.path.relpath(runs["compare"], runs["a"])).as_posix() + "#case=" + case_id
    opened = Opened(browser, runs["a"] / "report.html")
    page = opened.page
    page.goto(opened.url + "#case=" + quote("no-such-case") + "&back=" + quote(back, safe=""))
    note = page.locator("#case-note")
    assert note.inner_text().startswith("Case no-such-case is not among the cases of this page.")
    assert page.locator("#case-panel").count() == 0
    note.locator("#back-link").click()
    page.wait_for_function(
        "id => document.querySelector('#case-panel h3')?.textContent.startsWith('Case ' + id)",
        arg=case_id,
    )
    assert page.url.endswith("compare.html#case=" + case_id)
    assert opened.errors == []


# -- the hostile corpus on both pages ---------------------------------------------------

SHOWN_AS_TEXT = [
    "<script>document.title='pwned'</script>",
    "</pre><img src=x onerror=alert(1)>",
]


def test_the_hostile_corpus_stays_text_in_every_case_view(hostile_run, browser):
    """Every case of the corpus's run opened in turn; tags, names, contents
    and model answers show as text, nothing runs and the page keeps its width."""
    run_dir, _, _, records, _ = hostile_run
    opened = Opened(browser, run_dir / "report.html")
    page = opened.page
    assert sorted(opened.rows()) == sorted(records)
    seen = ""
    for case_id in records:
        page.evaluate("id => { location.hash = 'case=' + encodeURIComponent(id); }", case_id)
        page.wait_for_function(
            "id => document.querySelector('#case-panel h3')?.textContent.startsWith('Case ' + id)",
            arg=case_id,
        )
        seen += page.inner_text("#case-panel")
        opened.assert_inert()
    assert page.locator("img").count() == 3  # the plots
    for text in SHOWN_AS_TEXT:
        assert text in seen
    table = page.inner_text("#breakdown-tag")
    assert "<img src=x onerror=\"document.title='pwned'\">" in table and "a|b|c" in table


def test_the_hostile_corpus_stays_text_on_the_compare_page(hostile_run, browser, tmp_path):
    """B is the corpus's run with every verdict turned, so every case flips
    and shows on the page side by side."""
    run_dir, _, _, records, _ = hostile_run
    turned = tmp_path / "turned"
    turned.mkdir()
    shutil.copy(run_dir / "manifest.json", turned / "manifest.json")
    with (turned / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for rec in records.values():
            passed = not rec["score"]["passed"]
            rec = {**rec, "score": {**rec["score"], "passed": passed}}
            rec["score"]["counts"] = {**rec["score"]["counts"], "case_pass": [int(passed), 1]}
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    result = compare(load_outcomes(run_dir), load_outcomes(turned))
    assert len(result.flipped) == len(records)
    page_path = write_compare_page(tmp_path / "compare.html", result, run_dir, turned)
    opened = Opened(browser, page_path)
    page = opened.page
    assert sorted(opened.rows()) == sorted(records)
    text = page.inner_text("#case-table")
    for case_id in records:
        page.evaluate("id => { location.hash = 'case=' + encodeURIComponent(id); }", case_id)
        page.wait_for_function(
            "id => document.querySelector('#case-panel h3')?.textContent.startsWith('Case ' + id)",
            arg=case_id,
        )
        page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        text += page.inner_text("#case-panel")
        opened.assert_inert()
    for shown in SHOWN_AS_TEXT:
        assert shown in text
    assert page.locator("img").count() == 0
    opened.assert_inert()


def test_breakdown_labels_stay_on_one_line(runs, browser):
    """A tag or rule label is one line: never broken a few letters a line by a squeezed
    column. A label longer than the cell's maximum width ends in an ellipsis, with the
    whole label in its title (shown on hover)."""
    opened = Opened(browser, runs["a"] / "report.html")
    cells = opened.page.eval_on_selector_all(
        ".breakdowns td.label div",
        """divs => divs.map(d => {
            const style = getComputedStyle(d);
            return {text: d.textContent, title: d.title, height: d.getBoundingClientRect().height,
                    font: parseFloat(style.fontSize), width: d.clientWidth,
                    full: d.scrollWidth, ellipsis: style.textOverflow};
        })""",
    )
    labels = [c["text"] for c in cells]
    assert "named_on_assistant_role" in labels  # a long tag of the ten cases
    for cell in cells:
        assert cell["height"] < 1.6 * cell["font"], cell  # one line
        assert cell["title"] == cell["text"]
        assert cell["full"] <= cell["width"] or cell["ellipsis"] == "ellipsis", cell
    tag = next(c for c in cells if c["text"] == "named_on_assistant_role")
    assert tag["full"] <= tag["width"]  # shown whole: 23 characters fit
    assert opened.errors == []

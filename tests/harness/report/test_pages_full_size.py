"""The pages on generated full-size runs (``tests/harness/generated_runs.py``: 1,200
cases each, hundreds changed between them) in headless Chromium: every changed case can
be reached through the pages of the table, each filter keeps exactly the cases it
names (counted here from the records, not from the page's data), the keyboard opens,
steps through and closes cases, Back closes the case view, and the links between the
comparison page and the reports lead to the case and back. How fast the pages are is
measured by benchmarks/bench_pages.py, not here."""

import json
import re
from urllib.parse import unquote

import pytest

from hy_eval.harness.analysis import compare, run_outcomes
from hy_eval.harness.report import write_compare_page
from tests.harness.generated_runs import write_pair
from tests.harness.report.test_pages_browser import (  # noqa: F401
    Opened,
    browser,
    launched_chromium,
    records_of,
)

#: Every row of the case table, page after page.
ALL_ROWS = """() => {
  const ids = [];
  for (;;) {
    ids.push(...[...document.querySelectorAll('#case-table tbody tr')].map(r => r.dataset.case));
    const next = document.getElementById('page-next');
    if (next.disabled) return ids;
    next.click();
  }
}"""


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("full")
    run_a, run_b = write_pair(tmp / "pair", cases=1200, changed=800)
    result = compare(run_outcomes(run_a), run_outcomes(run_b))
    (tmp / "pages").mkdir()  # the page apart from the runs: its links are relative
    page = write_compare_page(tmp / "pages" / "compare.html", result, run_a, run_b)
    return {
        "a": records_of(run_a),
        "b": records_of(run_b),
        "result": result,
        "page": page,
        "run_a": run_a,
        "run_b": run_b,
    }


@pytest.fixture(scope="module")
def chromium(full):
    """The module's Chromium (``browser`` gives it to each test), launched after the runs
    are written: Playwright's sync API keeps an event loop running while it is open."""
    yield from launched_chromium()


def fact_checks(rec):
    return [c for c in rec["score"]["checks"] if c["check"] == "fact"]


def verdicts(rec):
    """Each check's verdict by its kind and place among its kind (fact#0, absent#0...)."""
    seen, out = {}, {}
    for c in rec["score"]["checks"]:
        n = seen[c["check"]] = seen.get(c["check"], -1) + 1
        out[f"{c['check']}#{n}"] = c["ok"]
    return out


def changed_ids(a, b):
    """The changed cases counted from the records: a check's verdict differs."""
    return {i for i in a.keys() & b.keys() if verdicts(a[i]) != verdicts(b[i])}


def attribution(rec):
    """The record fails a gold fact by its subject (the pages' "attribution" problem)."""
    return any(c["detail"].get("subject_ok") is False for c in fact_checks(rec) if not c["ok"])


def report_ids(run_dir):
    """The case ids report.html holds (its data block, read here without a browser)."""
    text = (run_dir / "report.html").read_text("utf-8")
    block = re.search(r'<script type="application/json" id="hy-data">(.*?)</script>', text, re.S)
    return {c["id"] for c in json.loads(block.group(1))["cases"]}


def test_every_changed_case_is_on_both_reports(full):
    """Each changed case's links lead to a case on A's and B's report.html: the reports
    hold a 1,200-case run whole (at 1,000 cases, 106 of 605 were not on A's)."""
    changed = changed_ids(full["a"], full["b"])
    assert len(changed) == full["result"].changed_count
    assert len(full["a"]) == 1200
    assert report_ids(full["run_a"]) == set(full["a"])
    assert report_ids(full["run_b"]) == set(full["b"])


def test_every_changed_case_is_listed_and_reachable(full, browser):  # noqa: F811
    result = full["result"]
    assert result.changed_count >= 500 and len(full["a"]) >= 1000
    opened = Opened(browser, full["page"])
    rows = opened.page.evaluate(ALL_ROWS)
    assert len(rows) == len(set(rows)) == result.changed_count
    assert {f.id for f in result.flipped} <= set(rows)
    assert opened.page.text_content("#case-count").startswith(f"{result.changed_count} of ")
    opened.assert_inert()


def test_filters_keep_exactly_the_cases_they_name(full, browser):  # noqa: F811
    """Flipped, a language, and a kind of change counted from the records: a gold
    fact's check whose verdict changed, matched in both runs, its subject right in A and
    wrong in B."""
    a, b, result = full["a"], full["b"], full["result"]
    opened = Opened(browser, full["page"])
    page = opened.page
    page.select_option("#f-change", "flipped")
    assert sorted(page.evaluate(ALL_ROWS)) == sorted(f.id for f in result.flipped)
    page.select_option("#f-change", "")
    page.select_option("#f-lang", "zh")
    zh = page.evaluate(ALL_ROWS)
    assert sorted(zh) == sorted(i for i in changed_ids(a, b) if a[i]["lang"] == "zh")
    page.select_option("#f-lang", "")
    wrong = set()
    for cid, ra in a.items():
        for ca, cb in zip(fact_checks(ra), fact_checks(b[cid]), strict=True):
            da, db = ca["detail"], cb["detail"]
            both = da["matched"] is not None and db["matched"] is not None
            if ca["ok"] != cb["ok"] and both and da["subject_ok"] and db["subject_ok"] is False:
                wrong.add(cid)
    assert wrong
    page.click('#kinds button[data-kind="subject wrong"]')
    assert sorted(page.evaluate(ALL_ROWS)) == sorted(wrong)
    assert page.get_attribute('#kinds button[data-kind="subject wrong"]', "aria-pressed") == "true"
    assert opened.errors == []


def test_the_report_problem_filter_tells_attribution_from_recall(full, browser):  # noqa: F811
    a = full["a"]
    opened = Opened(browser, full["run_a"] / "report.html")
    page = opened.page
    shown = set(
        page.evaluate(
            "() => JSON.parse(document.getElementById('hy-data').textContent).cases.map(c => c.id)"
        )
    )
    page.select_option("#f-problem", "attribution")
    attribution = {
        i
        for i in shown
        if any(c["detail"].get("subject_ok") is False for c in fact_checks(a[i]) if not c["ok"])
    }
    assert sorted(page.evaluate(ALL_ROWS)) == sorted(attribution)
    page.select_option("#f-problem", "recall")
    recall = {
        i for i in shown if any(c["detail"].get("matched") is None for c in fact_checks(a[i]))
    }
    assert sorted(page.evaluate(ALL_ROWS)) == sorted(recall) and recall != attribution


def test_the_compare_problem_filter_matches_a_problem_in_a_or_in_b(full, browser):  # noqa: F811
    """The "attribution" problem lists the changed cases with a fact given to the wrong subject in
    either run: those A got wrong and B right too, not B's alone."""
    a, b = full["a"], full["b"]
    changed = changed_ids(a, b)
    either = {i for i in changed if attribution(a[i]) or attribution(b[i])}
    assert either != {i for i in changed if attribution(b[i])}
    opened = Opened(browser, full["page"])
    page = opened.page
    assert "A or B" in page.inner_text("label:has(#f-problem)")
    page.select_option("#f-problem", "attribution")
    assert sorted(page.evaluate(ALL_ROWS)) == sorted(either)
    assert opened.errors == []


def test_the_arrow_keys_go_on_past_the_edge_of_a_page_of_rows(full, browser):  # noqa: F811
    opened = Opened(browser, full["page"])
    page = opened.page
    first_page = opened.rows()
    assert len(first_page) == 50
    page.focus(f'#case-table tbody tr[data-case="{first_page[-1]}"]')
    page.keyboard.press("ArrowDown")
    assert page.text_content("#page-of").strip().startswith("page 2 of ")
    assert page.evaluate("document.activeElement.dataset.case") == opened.rows()[0]
    page.keyboard.press("ArrowUp")
    assert page.text_content("#page-of").strip().startswith("page 1 of ")
    assert page.evaluate("document.activeElement.dataset.case") == first_page[-1]
    assert opened.errors == []


def test_the_keyboard_opens_steps_through_and_closes_cases(full, browser):  # noqa: F811
    opened = Opened(browser, full["page"])
    page = opened.page
    rows = opened.rows()
    page.focus("#case-table tbody tr")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.case") == rows[1]
    page.keyboard.press("Enter")
    page.locator("#case-panel").wait_for()
    assert unquote(page.evaluate("location.hash")) == f"#case={rows[1]}"
    page.click("#next-case")
    assert page.inner_text("#case-panel h3").startswith(f"Case {rows[2]}")
    page.keyboard.press("Escape")
    assert page.locator("#case-panel").count() == 0
    header = page.locator("#case-table th", has_text="lang")
    header.focus()
    page.keyboard.press("Enter")
    assert header.get_attribute("aria-sort") == "ascending"
    assert opened.errors == []


def test_back_closes_the_case_view_and_links_lead_to_the_reports_and_back(full, browser):  # noqa: F811
    opened = Opened(browser, full["page"])
    page = opened.page
    page.select_option("#f-lang", "zh")
    # A case A passed, listed after the failed ones on its report.html.
    case_id = next(i for i in page.evaluate(ALL_ROWS) if full["a"][i]["score"]["passed"])
    page.fill("#f-search", case_id)
    page.click(f'#case-table tbody tr[data-case="{case_id}"]')
    page.locator("#case-panel").wait_for()
    assert page.locator('#case-panel [lang="zh"]').count() >= 1  # Chinese glyph forms
    page.go_back()
    page.wait_for_function("() => !document.getElementById('case-panel')")
    page.click(f'#case-table tbody tr[data-case="{case_id}"]')
    page.click("#report-link-a")
    page.wait_for_function(
        "id => document.querySelector('#case-panel h3')?.textContent.startsWith('Case ' + id)",
        arg=case_id,
    )
    assert "report.html" in page.url
    page.click("#back-link")
    page.wait_for_function(
        "id => document.querySelector('#case-panel h3')?.textContent.startsWith('Case ' + id)",
        arg=case_id,
    )
    assert page.url.endswith("compare.html#case=" + case_id)
    assert opened.errors == []

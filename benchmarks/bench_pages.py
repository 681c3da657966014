"""How fast the HTML pages open and answer in headless Chromium, on generated full-size
runs (``tests/harness/generated_runs.py``: runs made without a model, scored by the real
scorer).

Three pages: report.html of a run of the shipped suite's size (457 cases, the yardstick),
report.html of a 1,200-case run, and the comparison page of two 1,200-case runs with
hundreds of changed cases. For each: the load (navigation to the load event, the
page's script done; median of ``--repeats``), and the slowest and median answer to a
keystroke in the search box and to a filter change (the event dispatched to the next
frame drawn). Times vary with the machine and what else runs on it, so each is also
printed as a ratio to the 457-case report's load measured in the same run.

    PYTHONPATH=$PWD python benchmarks/bench_pages.py [--repeats 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hy_eval.harness.analysis import compare, run_outcomes  # noqa: E402
from hy_eval.harness.report import write_compare_page  # noqa: E402
from tests.harness.generated_runs import write_pair, write_single  # noqa: E402

#: In-page: each prefix of WORD typed into the search box, then a filter changed; the
#: time from the event to the next frame, in ms.
MEASURE_INPUT = """async ([word, filter]) => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const search = document.getElementById("f-search");
  const times = [];
  for (const text of [...Array(word.length).keys()].map((i) => word.slice(0, i + 1)).concat([""])) {
    const t = performance.now();
    search.value = text;
    search.dispatchEvent(new Event("input"));
    await frame();
    times.push(performance.now() - t);
  }
  const select = document.getElementById(filter);
  for (const option of Array.from(select.options).slice(1, 4).concat([select.options[0]])) {
    const t = performance.now();
    select.value = option.value;
    select.dispatchEvent(new Event("change"));
    await frame();
    times.push(performance.now() - t);
  }
  return times;
}"""


def measure(browser, path: Path, filter_id: str, repeats: int) -> dict[str, float]:
    loads, inputs = [], []
    for _ in range(repeats):
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e, seen=errors: seen.append(str(e)))
        started = time.perf_counter()
        page.goto(path.resolve().as_uri(), wait_until="load")
        loads.append(time.perf_counter() - started)
        inputs += page.evaluate(MEASURE_INPUT, ["the user", filter_id])
        assert not errors, errors
        page.close()
    return {
        "load_s": statistics.median(loads),
        "input_max_ms": max(inputs),
        "input_median_ms": statistics.median(inputs),
        "mb": path.stat().st_size / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", type=int, default=1200)
    parser.add_argument("--changed", type=int, default=800)
    parser.add_argument("--keep", help="write the runs here and keep them")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-pages-"))
    small = write_single(work / "suite-size")
    run_a, run_b = write_pair(work / "pair", args.cases, args.changed)
    result = compare(run_outcomes(run_a), run_outcomes(run_b))
    page = write_compare_page(work / "pair" / "compare.html", result, run_a, run_b)
    print(
        f"comparison: {result.cases} shared cases, {result.flipped_count} flipped, "
        f"{result.changed_count} changed"
    )
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        rows = [
            ("report, 457 cases", measure(browser, small / "report.html", "f-lang", args.repeats)),
            (
                f"report, {args.cases} cases",
                measure(browser, run_a / "report.html", "f-lang", args.repeats),
            ),
            ("comparison page", measure(browser, page, "f-kind", args.repeats)),
        ]
        browser.close()
    base = rows[0][1]["load_s"]
    print(f"{'page':<22}{'MB':>6}{'load s':>8}{'x457':>6}{'key max ms':>12}{'key med ms':>12}")
    for name, r in rows:
        print(
            f"{name:<22}{r['mb']:>6.1f}{r['load_s']:>8.2f}{r['load_s'] / base:>6.2f}"
            f"{r['input_max_ms']:>12.0f}{r['input_median_ms']:>12.0f}"
        )
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()

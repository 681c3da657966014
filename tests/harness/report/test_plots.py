"""The report's plots (E7): the same numbers give the same PNG bytes (a report can be
compared byte for byte), and a plot that cannot be drawn fails with the real error.

What each plot must show: every confusion cell with its count, the found cells coloured
on their own scale with a colour bar (a large "missing" column cannot wash them out),
every metric and rule with its value and CI or "not measured", and rule ids with their
titles from docs/spec.md."""

import io
import re
from pathlib import Path

import pytest
from matplotlib import image

from hy_eval.harness.datasets import RULE_IDS
from hy_eval.harness.report import PLOTS, RULE_TITLES, draw, figure
from hy_eval.harness.scoring import METRICS, SUBJECT_KINDS

SPEC = Path(__file__).resolve().parents[3] / "docs" / "spec.md"


def entry(value):
    return {"value": value, "ci": [max(0.0, value - 0.1), min(1.0, value + 0.1)], "n": 10}


NOT_MEASURED = {"value": None, "ci": [None, None], "n": 0}

DATA = {
    "metrics.png": {m: entry(i / (2 * len(METRICS))) for i, m in enumerate(METRICS)},
    "confusion.png": {
        g: {p: 3 * i + j for j, p in enumerate(SUBJECT_KINDS)}
        for i, g in enumerate(("user", "named", "assistant"))
    },
    "rules.png": {r: {"case_pass": entry(0.1 * k)} for k, r in enumerate(("A1", "P2", "R3"))},
}

#: A run like the embedded model's: most gold facts found by no predicted fact.
MOSTLY_MISSING = {
    "user": {"user": 150, "named": 10, "assistant": 2, "other": 5, "unknown": 3, "missing": 800},
    "named": {"user": 40, "named": 60, "assistant": 0, "other": 4, "unknown": 1, "missing": 600},
    "assistant": {"user": 3, "named": 0, "assistant": 1, "other": 0, "unknown": 0, "missing": 90},
}


def texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def tick_labels(fig):
    return [t.get_text() for t in fig.axes[0].get_yticklabels()]


def test_each_plot_is_a_png_and_the_same_numbers_give_the_same_bytes():
    assert set(DATA) == set(PLOTS)
    first = {name: draw(name, data) for name, data in DATA.items()}
    again = {name: draw(name, data) for name, data in DATA.items()}
    assert first == again
    assert all(png.startswith(b"\x89PNG") for png in first.values())
    changed = dict(DATA["rules.png"], A1={"case_pass": entry(0.9)})
    assert draw("rules.png", changed) != first["rules.png"]


def test_a_plot_that_cannot_be_drawn_fails_with_the_real_error():
    with pytest.raises(KeyError):
        draw("metrics.png", {"case_pass": entry(0.5)})  # the other metrics missing


def cell_colours(fig, cells):
    """The RGB colour of the PNG at a corner of each (row, column) cell of the first axes,
    clear of the count written at its centre."""
    dpi = 110
    fig.set_dpi(dpi)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    pixels = image.imread(io.BytesIO(buf.getvalue()), format="png")
    height = pixels.shape[0]
    out = {}
    for i, j in cells:
        x, y = fig.axes[0].transData.transform((j - 0.3, i - 0.3))
        out[(i, j)] = pixels[int(height - y), int(x), :3]
    return out


def test_the_found_cells_are_coloured_even_when_missing_is_most_of_every_row():
    fig = figure("confusion.png", MOSTLY_MISSING)
    kinds = [k for k in SUBJECT_KINDS if k != "missing"]
    found = [(i, j) for i in range(3) for j in range(len(kinds))]
    missing_col = len(kinds) + 0.1
    colours = cell_colours(fig, [*found, *((i, missing_col) for i in range(3))])
    for (i, j), rgb in colours.items():
        gold = list(MOSTLY_MISSING)[i]
        count = MOSTLY_MISSING[gold][kinds[j] if j < len(kinds) else "missing"]
        if j == missing_col:
            # Visible (not white) but pale: never darker than the darkest found cell.
            assert rgb.min() < 0.9 and rgb.mean() > 0.55, (gold, rgb)
        elif count:
            assert rgb.min() < 0.9, (gold, kinds[j], count, rgb)  # not near-white
        else:
            assert rgb.min() > 0.97, (gold, kinds[j], rgb)  # a zero cell stays white
    # Every cell carries its count, and the colours have a colour bar.
    shown = texts(fig)
    for row in MOSTLY_MISSING.values():
        for kind, count in row.items():
            assert any(t.split("\n")[0] == str(count) for t in shown), (kind, count)
    assert len(fig.axes) == 2 and "share" in fig.axes[1].get_ylabel()


def test_metrics_plot_prints_each_value_and_lists_the_unmeasured():
    metrics = dict(DATA["metrics.png"], operation_accuracy=NOT_MEASURED)
    fig = figure("metrics.png", metrics)
    labels = tick_labels(fig)
    assert [label.split(" (")[0] for label in labels] == list(METRICS)
    assert "operation_accuracy (n=0)" in labels
    shown = texts(fig)
    assert "not measured (n = 0)" in shown
    fourth = metrics[METRICS[3]]  # the fourth metric's value and CI, on its bar
    lo, hi = fourth["ci"]
    assert f"{fourth['value']:.3f} [{lo:.3f}, {hi:.3f}]" in shown
    assert len([t for t in shown if re.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", t)]) == (
        len(METRICS) - 1
    )
    no_ci = dict(metrics, case_pass={"value": 0.25, "ci": None, "n": 4})
    assert "0.250" in texts(figure("metrics.png", no_ci))


def test_rules_plot_names_its_axes_and_titles_each_rule():
    rules = dict(DATA["rules.png"], P4={"case_pass": NOT_MEASURED})
    fig = figure("rules.png", rules)
    ax = fig.axes[0]
    assert ax.get_xlabel().startswith("case_pass") and ax.get_ylabel() == "rule"
    labels = tick_labels(fig)
    assert labels[0] == f"A1  {RULE_TITLES['A1']} (n=10)"
    assert all(any(label.startswith(f"{r}  {RULE_TITLES[r]}") for label in labels) for r in rules)
    assert "not measured (n = 0)" in texts(fig)


def test_every_rule_of_the_spec_has_a_title_and_no_title_is_for_an_unknown_rule():
    defined = set(re.findall(r"^- ([MDAPRHE]\d) ", SPEC.read_text("utf-8"), flags=re.M))
    assert defined == set(RULE_IDS) == set(RULE_TITLES)
    assert all(0 < len(title) <= 32 for title in RULE_TITLES.values())

"""The report's plots (E7): the same numbers give the same PNG bytes (a report can be
compared byte for byte), and a plot that cannot be drawn fails with the real error."""

import pytest

from hy_eval.harness._plots import PLOTS, draw
from hy_eval.harness._scoring import METRICS, SUBJECT_KINDS


def entry(value):
    return {"value": value, "ci": [max(0.0, value - 0.1), min(1.0, value + 0.1)], "n": 10}


DATA = {
    "metrics.png": {m: entry(i / (2 * len(METRICS))) for i, m in enumerate(METRICS)},
    "confusion.png": {
        g: {p: 3 * i + j for j, p in enumerate(SUBJECT_KINDS)}
        for i, g in enumerate(("user", "named", "assistant"))
    },
    "rules.png": {r: {"case_pass": entry(0.1 * k)} for k, r in enumerate(("A1", "P2", "R3"))},
}


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

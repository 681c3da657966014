"""The report's plots (E7) drawn by the helper process give the same PNG bytes as drawn
in-process, and a worker that dies or answers with an error costs no plot."""

import pytest

from hy_eval.harness._plots import Plotter, PlotWorker
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


def draw_all(plotter):
    try:
        for name, data in DATA.items():
            plotter.submit(name, data)
        return plotter.collect()
    finally:
        plotter.close()


def test_the_worker_draws_the_bytes_drawn_in_process():
    here = draw_all(Plotter())
    worker = PlotWorker.start()
    assert worker is not None
    there = draw_all(worker)
    assert not worker._broken  # the worker answered all three itself
    assert list(there) == list(DATA) and there == here
    assert all(png.startswith(b"\x89PNG") for png in there.values())


def test_a_dead_worker_costs_no_plot():
    worker = PlotWorker.start()
    assert worker is not None
    worker._proc.kill()
    worker._proc.wait()
    plots = draw_all(worker)
    assert worker._broken and plots == draw_all(Plotter())


def test_a_plot_the_worker_cannot_draw_fails_here_with_the_real_error():
    worker = PlotWorker.start()
    assert worker is not None
    worker.submit("metrics.png", {"case_pass": entry(0.5)})  # the other metrics missing
    with pytest.raises(KeyError):
        worker.collect()
    worker.close()

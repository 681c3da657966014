"""The report's three plots (E7), drawn in-process or by a helper process.

Drawing is the largest part of a report (three matplotlib figures, after importing
matplotlib). A run therefore starts a :class:`PlotWorker` with its first case that is
not reused from the cache: a second Python process that imports matplotlib while the
model is being asked, then draws each plot as soon as its numbers exist, the metrics and
confusion plots while this process computes the per-rule CIs that the third plot shows.
Both processes run the same :func:`draw`, so the PNG bytes are the same; if the worker
cannot start, fails or is slow, the plots it owes are drawn here instead.

The worker reads one JSON request per line on stdin and answers one JSON line per request
on stdout; it stops at end of input, so it also ends when the run is killed.
"""

from __future__ import annotations

import base64
import io
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from hy_eval.harness._scoring import ACCURACY_METRICS, METRICS, SUBJECT_KINDS

#: Seconds to wait for the worker's answer before drawing the plot here.
WORKER_TIMEOUT = 60.0


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any, *, left: float, bottom: float = 0.45, top: float = 0.4) -> bytes:
    """The figure as PNG, with margins in inches set before drawing: margins found by
    ``bbox_inches="tight"`` cost a second full draw of every figure."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(
        left=left / width, right=1 - 0.25 / width, bottom=bottom / height, top=1 - top / height
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def _label_width(labels: list[str]) -> float:
    """Inches taken by the longest y tick label at the default 10 pt font, plus room."""
    return 0.3 + 0.085 * max((len(label) for label in labels), default=4)


def _ci_bars(
    names: list[str],
    values: list[float],
    errors: tuple[list[float], list[float]],
    colors: str | list[str],
    title: str,
    row_height: float,
) -> bytes:
    """Horizontal bars in [0, 1] with their CIs as error bars, first name on top."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, row_height * len(names) + 1))
    ax.barh(names, values, xerr=list(errors), color=colors, capsize=3)
    ax.set_xlim(0, 1)
    ax.invert_yaxis()
    ax.set_title(title)
    try:
        return _png(fig, left=_label_width(names))
    finally:
        plt.close(fig)


def _metrics_plot(metrics: dict[str, Any]) -> bytes:
    names = [n for n in METRICS if metrics[n]["value"] is not None]
    vals = [metrics[n]["value"] for n in names]
    lo = [metrics[n]["value"] - metrics[n]["ci"][0] for n in names]
    hi = [metrics[n]["ci"][1] - metrics[n]["value"] for n in names]
    colors = ["#2b8a3e" if n in ACCURACY_METRICS else "#c92a2a" for n in names]
    title = "Metrics with 95% bootstrap CI (green: higher is better, red: lower)"
    return _ci_bars(names, vals, (lo, hi), colors, title, 0.35)


def _confusion_plot(conf: dict[str, dict[str, int]]) -> bytes:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3))
    grid = [[conf[g][p] for p in SUBJECT_KINDS] for g in conf]
    ax.imshow(grid, cmap="Blues")
    ax.set_xticks(range(len(SUBJECT_KINDS)), SUBJECT_KINDS)
    ax.set_yticks(range(len(conf)), list(conf))
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            ax.text(j, i, str(v), ha="center", va="center")
    ax.set_xlabel("predicted subject")
    ax.set_ylabel("gold subject")
    ax.set_title("Attribution confusion")
    try:
        return _png(fig, left=1.3, bottom=0.7, top=0.35)
    finally:
        plt.close(fig)


def _rules_plot(rules: dict[str, dict[str, Any]]) -> bytes:
    names = sorted(rules)
    cis = [rules[r]["case_pass"]["ci"] for r in names]
    vals = [rules[r]["case_pass"]["value"] or 0.0 for r in names]
    err_lo = [v - (ci[0] or 0.0) for v, ci in zip(vals, cis, strict=True)]
    err_hi = [(ci[1] or 0.0) - v for v, ci in zip(vals, cis, strict=True)]
    return _ci_bars(names, vals, (err_lo, err_hi), "#1c7ed6", "case_pass per rule (95% CI)", 0.3)


#: Plot file -> what draws it from its data (the overall metrics, the confusion counts,
#: the per-rule breakdown).
PLOTS = {
    "metrics.png": _metrics_plot,
    "confusion.png": _confusion_plot,
    "rules.png": _rules_plot,
}


def draw(name: str, data: Any) -> bytes:
    return PLOTS[name](data)


class Plotter:
    """Draws each plot in this process when it is submitted."""

    def __init__(self) -> None:
        self._plots: dict[str, bytes] = {}

    def submit(self, name: str, data: Any) -> None:
        self._plots[name] = draw(name, data)

    def collect(self) -> dict[str, bytes]:
        """Every submitted plot, by file name, in submission order."""
        plots, self._plots = self._plots, {}
        return plots

    def close(self) -> None:
        return None


class PlotWorker(Plotter):
    """Plots drawn by a helper process (see the module's docstring); :meth:`start` gives
    ``None`` when the process cannot be started."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        super().__init__()
        self._proc = proc
        self._pending: dict[str, Any] = {}  # name -> data, until the worker answers
        self._broken = False
        # Answers are read as they come, so the worker never waits on a full pipe (a PNG
        # is larger than the pipe's buffer) before drawing the next plot.
        self._answers: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read_answers, daemon=True).start()

    def _read_answers(self) -> None:
        assert self._proc.stdout is not None
        try:
            for line in self._proc.stdout:
                self._answers.put(line)
        except (OSError, ValueError):  # closed by close()
            pass
        self._answers.put(None)

    @classmethod
    def start(cls) -> PlotWorker | None:
        root = str(Path(__file__).resolve().parents[2])  # importable however we were
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "hy_eval.harness._plot_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": path},
            )
        except OSError:
            return None
        return cls(proc)

    def submit(self, name: str, data: Any) -> None:
        self._pending[name] = data
        if self._broken:
            return
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps({"name": name, "data": data}).encode() + b"\n")
            self._proc.stdin.flush()
        except (OSError, ValueError):
            self._broken = True

    def collect(self) -> dict[str, bytes]:
        order = list(self._pending)
        drawn: dict[str, bytes] = {}
        while self._pending and not self._broken:
            try:
                line = self._answers.get(timeout=WORKER_TIMEOUT)
            except queue.Empty:
                line = None
            try:
                answer = json.loads(line or b"")
                drawn[answer["name"]] = base64.b64decode(answer["png"])
                del self._pending[answer["name"]]
            except (ValueError, KeyError, TypeError):  # no answer, or an error answer
                self._broken = True
        for name, data in self._pending.items():  # draw here what the worker did not
            drawn[name] = draw(name, data)
        self._pending = {}
        return {name: drawn[name] for name in order}

    def close(self) -> None:
        """Stop the worker at once: it keeps nothing, and may still be importing."""
        proc = self._proc
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:  # stdin with a request the worker never read
                pass


def main() -> None:
    """The worker (``python -m hy_eval.harness._plot_worker``): import matplotlib now, then
    answer requests until end of input."""
    _pyplot()
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            answer = {
                "name": request["name"],
                "png": base64.b64encode(draw(request["name"], request["data"])).decode(),
            }
        except Exception as exc:  # the parent draws it itself and shows the error then
            answer = {"name": request["name"], "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()

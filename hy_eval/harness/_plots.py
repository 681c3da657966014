"""The report's three plots (E7) as PNG bytes: the metrics with their CIs, the
attribution confusion, and case_pass per rule. matplotlib is imported on the first draw:
a command that draws nothing never loads it."""

from __future__ import annotations

import io
from typing import Any

from hy_eval.harness._scoring import ACCURACY_METRICS, METRICS, SUBJECT_KINDS


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
    """The plot file ``name`` (a key of ``PLOTS``) drawn from ``data``."""
    return PLOTS[name](data)

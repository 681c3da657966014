"""The report's three plots (E7) as PNG bytes: the metrics with their values and CIs, the
attribution confusion, and case_pass per rule. ``figure`` builds a plot's matplotlib
figure (tests read its text from it), ``draw`` renders it. matplotlib is imported on the
first plot: a command that draws nothing never loads it."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from hy_eval.harness.report._ruletitles import rule_label
from hy_eval.harness.scoring import ACCURACY_METRICS, METRICS, SUBJECT_KINDS

#: Bars end at 1; the value and CI of a bar are written right of it, in this much room.
_TEXT_ROOM = 0.45
_GREEN, _RED, _BLUE = "#2b8a3e", "#c92a2a", "#1c7ed6"


def _new_figure(width: float, height: float) -> Any:
    """A figure with no pyplot state: nothing to close, nothing shared between plots."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _margins(fig: Any, left: float, right: float = 0.25, bottom: float = 0.55) -> Any:
    """Sets the figure's margins in inches (the top one fixed) and returns the figure.
    Margins are set before drawing: margins found by ``bbox_inches="tight"`` cost a
    second full draw of every figure."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(
        left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - 0.4 / height
    )
    return fig


def _png(fig: Any) -> bytes:
    """The figure as PNG bytes; the same figure gives the same bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def _label_width(labels: list[str]) -> float:
    """Inches taken by the longest y tick label at the default 10 pt font, plus room."""
    return 0.3 + 0.085 * max((len(label) for label in labels), default=4)


def _value_text(entry: dict[str, Any]) -> str:
    """ "0.440 [0.372, 0.511]", or the value alone when there is no CI."""
    ci = entry.get("ci")
    text = f"{entry['value']:.3f}"
    if ci and ci[0] is not None and ci[1] is not None:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


def _ci_bars(
    labels: list[str],
    entries: list[dict[str, Any]],
    colors: list[str],
    axes: tuple[str, str, str],
    row_height: float,
) -> Any:
    """Horizontal bars in [0, 1], first label on top, each with its CI as an error bar and
    its value and CI written beside it; an entry without a value gets no bar and says
    "not measured (n = N)" instead, so no label disappears. ``axes`` is the title and
    the x and y axis labels."""
    left = _label_width(labels)
    fig = _new_figure(max(8.0, left + 5.5), row_height * len(labels) + 1.3)
    ax = fig.subplots()
    ys = range(len(labels))
    for y, entry, color in zip(ys, entries, colors, strict=True):
        value = entry["value"]
        if value is None:
            ax.text(
                0.01,
                y,
                f"not measured (n = {entry.get('n', 0)})",
                va="center",
                fontsize=8,
                color="#6a737d",
                style="italic",
            )
            continue
        ci = entry.get("ci") or [None, None]
        lo, hi = (value if c is None else c for c in ci)
        ax.barh(y, value, color=color, height=0.7)
        ax.errorbar(value, y, xerr=[[value - lo], [hi - value]], color="#1d2125", capsize=3)
        ax.text(max(value, hi) + 0.015, y, _value_text(entry), va="center", fontsize=8)
    ax.set_yticks(list(ys), labels)
    ax.set_xlim(0, 1 + _TEXT_ROOM)
    ax.set_xticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.axvline(1.0, color="#adb5bd", linewidth=0.8)
    ax.spines[["top", "right"]].set_visible(False)
    ax.invert_yaxis()
    title, xlabel, ylabel = axes
    fig.suptitle(title, x=0.02, ha="left", fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _margins(fig, left=left)


def _metrics_figure(metrics: dict[str, Any]) -> Any:
    labels = [f"{m} (n={metrics[m].get('n', 0)})" for m in METRICS]
    colors = [_GREEN if m in ACCURACY_METRICS else _RED for m in METRICS]
    axes = (
        "Metrics with 95% CI (green: higher is better, red: lower is better)",
        "value (share, 0 to 1)",
        "metric (n: cases it counts over)",
    )
    return _ci_bars(labels, [metrics[m] for m in METRICS], colors, axes, 0.35)


def _rules_figure(rules: dict[str, dict[str, Any]]) -> Any:
    names = sorted(rules)
    entries = [rules[r]["case_pass"] for r in names]
    labels = [f"{rule_label(r)} (n={e.get('n', 0)})" for r, e in zip(names, entries, strict=True)]
    axes = (
        "case_pass per rule with 95% CI (rule titles abridged from docs/spec.md;"
        " a case counts under each of its rules)",
        "case_pass: share of the rule's cases that pass",
        "rule",
    )
    return _ci_bars(labels, entries, [_BLUE] * len(names), axes, 0.3)


def _shaded(name: str, start: float, stop: float) -> Any:
    """Colormap ``name`` cut to [start, stop]: a pale start keeps the smallest non-zero
    cell visible against white (zero cells), a stop short of black keeps its text legible."""
    import matplotlib
    import numpy as np

    base = matplotlib.colormaps[name]
    return matplotlib.colors.ListedColormap(base(np.linspace(start, stop, 256)))


def _confusion_figure(conf: dict[str, dict[str, int]]) -> Any:
    """Gold subject (rows) by predicted subject (columns). The found facts are coloured by
    their share of the row's found facts, on their own colour bar; "missing" (gold facts
    no predicted fact matched) is set apart in grey by its share of the whole row, so a
    large missing count cannot wash the other cells out. Every cell shows its count."""
    import numpy as np

    kinds = [k for k in SUBJECT_KINDS if k != "missing"]
    gold = list(conf)
    found = np.array([[conf[g][p] for p in kinds] for g in gold], dtype=float)
    missing = np.array([[conf[g]["missing"]] for g in gold], dtype=float)
    share = found / np.maximum(found.sum(axis=1, keepdims=True), 1)
    lost = missing / np.maximum(found.sum(axis=1, keepdims=True) + missing, 1)
    fig = _new_figure(7.5, 0.55 * len(gold) + 1.9)
    ax = fig.subplots()
    blues = _shaded("Blues", 0.2, 0.95).with_extremes(bad="white")
    image = ax.imshow(
        np.ma.masked_where(found == 0, share),
        cmap=blues,
        vmin=0,
        vmax=1,
        extent=(-0.5, len(kinds) - 0.5, len(gold) - 0.5, -0.5),
        aspect="auto",
    )
    greys = _shaded("Greys", 0.08, 0.4)
    ax.imshow(
        lost,
        cmap=greys,
        vmin=0,
        vmax=1,
        aspect="auto",
        extent=(len(kinds) - 0.4, len(kinds) + 0.6, len(gold) - 0.5, -0.5),
    )
    for i in range(len(gold)):
        for j in range(len(kinds)):
            # White on a dark cell: decided by the cell's own colour (its luminance), so
            # no count is drawn black on navy whatever the colour map's cut.
            r, g, b, _ = blues(float(share[i, j]))
            dark = found[i, j] > 0 and 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.5
            ax.text(
                j,
                i,
                f"{int(found[i, j])}",
                ha="center",
                va="center",
                fontsize=9,
                color="white" if dark else "#1d2125",
            )
        ax.text(
            len(kinds) + 0.1,
            i,
            f"{int(missing[i, 0])}\n({lost[i, 0]:.0%} of row)",
            ha="center",
            va="center",
            fontsize=8,
            color="#1d2125",
        )
    ax.set_xlim(-0.5, len(kinds) + 0.6)
    ax.set_xticks([*range(len(kinds)), len(kinds) + 0.1], [*kinds, "missing"])
    ax.set_yticks(range(len(gold)), gold)
    ax.set_xlabel("predicted subject (missing: no predicted fact matched, grey)")
    ax.set_ylabel("gold subject")
    ax.set_title("Attribution confusion: fact counts", fontsize=10)
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label("share of the row's found facts", fontsize=8)
    return _margins(fig, left=1.3, right=0.9, bottom=0.75)


#: Plot file -> what builds its figure from its data (the overall metrics, the confusion
#: counts, the per-rule breakdown).
FIGURES: dict[str, Callable[[Any], Any]] = {
    "metrics.png": _metrics_figure,
    "confusion.png": _confusion_figure,
    "rules.png": _rules_figure,
}
PLOTS = FIGURES


def figure(name: str, data: Any) -> Any:
    """The matplotlib figure of plot file ``name`` (a key of ``FIGURES``) for ``data``."""
    return FIGURES[name](data)


def draw(name: str, data: Any) -> bytes:
    """The plot file ``name`` (a key of ``FIGURES``) drawn from ``data`` as PNG."""
    return _png(figure(name, data))

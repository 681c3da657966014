"""From case records to per-case counts and metrics: what the report and the comparison
of two runs both compute (rules E3, E4, E7).

Every metric is a ratio (``scoring/_score.py``): a case adds a numerator and a denominator.
With ``--repeats``, a case's counts are summed over its repeats (so the bootstrap
resamples cases, not repeats) and the case passes when at least ``k`` of its ``n``
repeats pass (:func:`passes_k_of_n`; ``k`` defaults to ``n``). The metric names come
from ``METRICS`` (``scoring/_score.py``) alone: a metric added there is counted, reported
and compared without an edit here.
"""

from __future__ import annotations

from array import array
from typing import Any

from hy_eval.harness.analysis._stats import ratios_with_ci
from hy_eval.harness.runlog import CaseRecord, MetricEntry
from hy_eval.harness.scoring import METRICS


def passes_k_of_n(passes: Any, runs: Any, k: int | None) -> Any:
    """Whether a case with ``passes`` passing repeats out of ``runs`` passes: at least
    ``k`` of them, or all of them when ``k`` is None. Works on numbers and on pandas
    columns alike."""
    return passes >= (runs if k is None else k)


class RecordRows:
    """The counts and labels of a run's records, one compact row per record: the
    (id, repeat) key, the labels (lang, rules, tags, passed) and each metric's numerator
    and denominator in one float array, in ``METRICS`` order."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, int]] = []
        self.labels: list[tuple[str, tuple[str, ...], tuple[str, ...], bool]] = []
        self.counts = array("d")
        #: Per repeat index, per metric: [num, den] summed over the cases.
        self.per_repeat: dict[int, dict[str, list[float]]] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, rec: CaseRecord) -> None:
        counts = rec.score.counts
        self.keys.append((rec.id, rec.repeat))
        self.labels.append((rec.lang, tuple(rec.rules), tuple(rec.tags), rec.passed))
        per = self.per_repeat.setdefault(rec.repeat, {m: [0.0, 0.0] for m in METRICS})
        for metric in METRICS:
            num, den = counts.get(metric, (0, 0))
            self.counts.append(num)
            self.counts.append(den)
            per[metric][0] += num
            per[metric][1] += den

    def columns(self) -> dict[str, Any]:
        """The rows as columns, ordered by case id and repeat (not in the order cases
        finished in: the bootstrap draws rows by position, so the CIs of the same records
        must not depend on which answer came back first; E3, E6)."""
        import numpy as np

        order = sorted(range(len(self.keys)), key=self.keys.__getitem__)
        counts = np.frombuffer(self.counts, dtype=float).reshape(-1, 2 * len(METRICS))[order]
        out: dict[str, Any] = {
            "id": [self.keys[i][0] for i in order],
            "repeat": [self.keys[i][1] for i in order],
        }
        for j, name in enumerate(("lang", "rules", "tags", "passed")):
            out[name] = [self.labels[i][j] for i in order]
        for j, metric in enumerate(METRICS):
            out[f"{metric}_num"] = counts[:, 2 * j]
            out[f"{metric}_den"] = counts[:, 2 * j + 1]
        return out


def case_table(rows: RecordRows, pass_k: int | None = None) -> Any:
    """One row per case (a DataFrame ordered by case id): id, lang, rules, tags,
    ``runs`` and ``passes`` (repeats run and passed), ``passed`` (k of n), and
    ``<metric>_num`` / ``<metric>_den`` summed over the repeats, with ``case_pass`` the
    case's k-of-n verdict."""
    import pandas as pd

    df = pd.DataFrame(rows.columns())
    if df.empty:
        return df
    if df["repeat"].max() == 0:
        df = df.drop(columns="repeat")
        df.insert(4, "runs", 1)
        df.insert(5, "passes", df["passed"].astype(int))
    else:
        sums = {c: "sum" for c in df.columns if c.endswith(("_num", "_den"))}
        labels = {"lang": "first", "rules": "first", "tags": "first"}
        df = df.groupby("id", sort=False).agg(
            {**labels, "repeat": "count", "passed": "sum", **sums}
        )
        df = df.rename(columns={"repeat": "runs", "passed": "passes"}).reset_index()
        df["passed"] = passes_k_of_n(df["passes"], df["runs"], pass_k)
    df["case_pass_num"] = df["passed"].astype(float)
    df["case_pass_den"] = 1.0
    return df


def case_counts(df: Any) -> dict[str, dict[str, tuple[float, float]]]:
    """Case id -> metric -> (numerator, denominator), from :func:`case_table`."""
    nums = df[[f"{m}_num" for m in METRICS]].to_numpy(dtype=float)
    dens = df[[f"{m}_den" for m in METRICS]].to_numpy(dtype=float)
    return {
        cid: {m: (float(nums[i, j]), float(dens[i, j])) for j, m in enumerate(METRICS)}
        for i, cid in enumerate(df["id"])
    }


def count_arrays(df: Any) -> tuple[Any, Any]:
    """The numerators and the denominators of :func:`case_table` as two float arrays,
    one row per case and one column per metric, in ``METRICS`` order."""
    nums = df[[f"{m}_num" for m in METRICS]].to_numpy(dtype=float)
    dens = df[[f"{m}_den" for m in METRICS]].to_numpy(dtype=float)
    return nums, dens


def metrics_of(df: Any) -> dict[str, Any]:
    """Every metric of a group of cases, all from one set of bootstrap resamples."""
    return dict(zip(METRICS, ratios_with_ci(*count_arrays(df)), strict=True))


def breakdown_by(df: Any, key: str) -> dict[str, Any]:
    """Every metric per language (``key="lang"``), rule or tag; a case counts in each of
    its rules and tags. The count columns are taken out of the table once and each group
    is a set of row positions into them (picking columns per group cost more than the
    bootstrap of a small group)."""
    column = {"lang": "lang", "rule": "rules", "tag": "tags"}[key]
    labels = df[column].reset_index(drop=True)
    if key != "lang":
        labels = labels.explode()
        labels = labels[labels.notna()]
    nums, dens = count_arrays(df)
    positions = labels.index.to_numpy()
    out = {}
    for value, rows in sorted(labels.groupby(labels).indices.items()):
        picked = positions[rows]
        entries = ratios_with_ci(nums[picked], dens[picked])
        out[str(value)] = {"cases": len(rows), **dict(zip(METRICS, entries, strict=True))}
    return out


def repeat_summary(df: Any, rows: RecordRows, pass_k: int | None) -> dict[str, Any] | None:
    """With repeats: n, k, the pass rate over all runs, the flaky cases (some repeats
    passed, not all) and each metric's spread across repeat indexes; else None."""
    n = int(df["runs"].max())
    if n <= 1:
        return None
    flaky = df[(df["passes"] > 0) & (df["passes"] < df["runs"])]
    return {
        "n": n,
        "k": pass_k or n,
        "pass_rate": float(df["passes"].sum() / df["runs"].sum()),
        "flaky_cases": sorted(flaky["id"].tolist()),
        "spread": repeat_spread(rows.per_repeat),
    }


def repeat_spread(totals: dict[int, dict[str, list[float]]]) -> dict[str, Any]:
    """Each metric computed per repeat index, and its spread across repeats."""
    out: dict[str, Any] = {}
    for m in METRICS:
        values = [t[m][0] / t[m][1] for _, t in sorted(totals.items()) if t[m][1] > 0]
        if values:
            mean = sum(values) / len(values)
            std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
            out[m] = {"per_repeat": values, "min": min(values), "max": max(values), "std": std}
    return out


def fmt_ratio(entry: MetricEntry | None) -> str:
    """``0.614 [0.518, 0.706]``, or ``n/a``."""
    if entry is None or entry.value is None:
        return "n/a"
    lo, hi = entry.ci
    if lo is None or hi is None:
        return f"{entry.value:.3f}"
    few = f" (n={entry.n}, few cases)" if entry.small_n else ""
    return f"{entry.value:.3f} [{lo:.3f}, {hi:.3f}]{few}"

"""The paired differences of two runs within each language, rule and tag (the comparison
page's "where B differs" tables).

Each group's B - A is computed as ``compare`` computes it over all cases: the shared
cases of the group, each compared with itself, a case counting for a metric only when it
has something to check there in both runs, and the paired score CI ``compare`` gives
(``paired_score_interval``). No p-value is given per group: with tens of groups some would fall
under 0.05 by chance alone, and the CI says how far each difference is known.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hy_eval.harness.analysis._compare import paired_sample
from hy_eval.harness.analysis._outcomes import RunOutcomes
from hy_eval.harness.analysis._paired_ci import paired_score_interval

#: The group kinds, in the order the page shows them.
GROUP_KEYS = ("lang", "rule", "tag")


def _labels(run: RunOutcomes) -> dict[str, dict[str, list[str]]]:
    """Case id -> group kind -> the case's labels (a case counts under each rule and tag)."""
    out: dict[str, dict[str, list[str]]] = {}
    for rec in run.checks:
        out.setdefault(
            rec.id, {"lang": [rec.lang] if rec.lang else [], "rule": rec.rules, "tag": rec.tags}
        )
    return out


def group_differences(
    a: RunOutcomes,
    b: RunOutcomes,
    metrics: Sequence[str],
    *,
    level: float = 0.95,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Group kind -> label -> ``{"cases": shared cases in the group, "metrics": {metric:
    {"a", "b", "diff", "ci", "n"}}}`` for the ``metrics`` named, on the runs' shared cases
    (labels read from A's records). A metric no case of the group counts for has None."""
    ids = sorted(set(a.counts) & set(b.counts))
    labels = _labels(a)
    empty = (0.0, 0.0)
    ca = np.array([[a.counts[i].get(m, empty) for m in metrics] for i in ids], dtype=float)
    cb = np.array([[b.counts[i].get(m, empty) for m in metrics] for i in ids], dtype=float)
    ca, cb = ca.reshape(len(ids), len(metrics), 2), cb.reshape(len(ids), len(metrics), 2)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key in GROUP_KEYS:
        members: dict[str, list[int]] = {}
        for row, cid in enumerate(ids):
            for label in labels.get(cid, {}).get(key, []):
                members.setdefault(label, []).append(row)
        out[key] = {
            label: _group(ca[rows], cb[rows], [ids[r] for r in rows], metrics, level)
            for label, rows in sorted(members.items())
        }
    return out


def _group(
    ca: np.ndarray,
    cb: np.ndarray,
    ids: list[str],
    metrics: Sequence[str],
    level: float,
) -> dict[str, Any]:
    """One group's entry (see ``group_differences``)."""
    ps = paired_sample(ca[..., 0], ca[..., 1], cb[..., 0], cb[..., 1], ids)
    bounds = np.array(paired_score_interval(ps.a_num, ps.a_den, ps.b_num, ps.b_den, level))
    entries: dict[str, Any] = {}
    for j, m in enumerate(metrics):
        n = int(ps.kept[:, j].sum())
        if n == 0:
            entries[m] = {"a": None, "b": None, "diff": None, "ci": [None, None], "n": 0}
            continue
        va = float(ps.a_num[:, j].sum() / ps.a_den[:, j].sum())
        vb = float(ps.b_num[:, j].sum() / ps.b_den[:, j].sum())
        lo, hi = bounds[:, j]
        entries[m] = {"a": va, "b": vb, "diff": vb - va, "ci": [float(lo), float(hi)], "n": n}
    return {"cases": len(ids), "metrics": entries}

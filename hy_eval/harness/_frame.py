"""A run's case records as a pandas DataFrame, for one's own analysis in a notebook
(issue 21; docs/analysis.md has an example)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hy_eval.harness._runner import read_records
from hy_eval.harness._scoring import METRICS


class RunFolderError(ValueError):
    """A folder that holds no run (no ``cases.jsonl``)."""


def load_run(run_dir: str | Path) -> Any:
    """One row per case and repeat of the run in ``run_dir``, in order of id and repeat.

    Columns: ``id``, ``repeat``, ``lang``, ``rules`` and ``tags`` (lists), ``status``,
    ``error``, ``passed``, ``failing_checks`` (list), ``tokens_in``, ``tokens_out``,
    ``cost_usd``, ``latency_s``; then for every metric of ``METRICS`` its value for the
    case (``num / den``, NaN when the case does not count for it) and the counts as
    ``<metric>_num`` and ``<metric>_den``, so that a group's micro average is
    ``df[m + "_num"].sum() / df[m + "_den"].sum()``, the value ``summary.json`` reports.
    """
    import numpy as np
    import pandas as pd

    path = Path(run_dir) / "cases.jsonl"
    if not path.is_file():
        raise RunFolderError(f"{run_dir}: not a run folder (no cases.jsonl)")
    rows = []
    for rec in read_records(path):
        score = rec.get("score", {})
        tokens = rec.get("tokens") or {}
        row: dict[str, Any] = {
            "id": rec["id"],
            "repeat": rec.get("repeat", 0),
            "lang": rec.get("lang"),
            "rules": list(rec.get("rules", [])),
            "tags": list(rec.get("tags", [])),
            "status": rec.get("status"),
            "error": rec.get("error"),
            "passed": bool(score.get("passed")),
            "failing_checks": sorted(
                {str(c["check"]) for c in score.get("checks", []) if not c.get("ok")}
            ),
            "tokens_in": tokens.get("input", 0),
            "tokens_out": tokens.get("output", 0),
            "cost_usd": rec.get("cost_usd"),
            "latency_s": rec.get("latency_s"),
        }
        counts = score.get("counts", {})
        for m in METRICS:
            num, den = counts.get(m, (0, 0))
            row[f"{m}_num"], row[f"{m}_den"] = float(num), float(den)
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    for m in METRICS:
        num, den = df[f"{m}_num"], df[f"{m}_den"]
        df[m] = np.where(den > 0, num / den.where(den > 0, 1.0), np.nan)
    df = df.sort_values(["id", "repeat"], kind="stable").reset_index(drop=True)
    front = [c for c in df.columns if not c.endswith(("_num", "_den"))]
    return df[front + [c for c in df.columns if c.endswith(("_num", "_den"))]]

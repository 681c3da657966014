"""A run's case records as a pandas DataFrame, for one's own analysis in a notebook
(docs/analysis.md has an example)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hy_eval.harness.runlog import RECORDS_NAME, RunFolderError, read_records
from hy_eval.harness.scoring import METRICS


def cases_frame(run_dir: str | Path) -> Any:
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

    path = Path(run_dir) / RECORDS_NAME
    if not path.is_file():
        raise RunFolderError(f"{run_dir}: not a run folder (no {RECORDS_NAME})")
    rows = []
    for rec in read_records(path):
        row: dict[str, Any] = {
            "id": rec.id,
            "repeat": rec.repeat,
            "lang": rec.lang,
            "rules": list(rec.rules),
            "tags": list(rec.tags),
            "status": rec.status,
            "error": rec.error,
            "passed": rec.passed,
            "failing_checks": rec.score.failing(),
            "tokens_in": rec.tokens.get("input", 0),
            "tokens_out": rec.tokens.get("output", 0),
            "cost_usd": rec.cost_usd,
            "latency_s": rec.latency_s,
        }
        counts = rec.counts()
        for m in METRICS:
            row[f"{m}_num"], row[f"{m}_den"] = counts.get(m, (0.0, 0.0))
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

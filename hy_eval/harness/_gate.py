"""Baselines and regression gates (rule E5).

A baseline is a file written only by ``hy-eval baseline bless RUN_DIR``: the run's
metrics, per-case outcomes, dataset and prompt hashes, provider and model. A gates file
(TOML) sets per metric an absolute floor (``min``) or ceiling (``max``), and a largest
allowed drop (``max_drop``, for higher-is-better metrics) or rise (``max_rise``, for
rates) against the baseline that counts only when it is statistically significant:

    baseline = "reports/baselines/multi_speaker.json"   # optional
    alpha = 0.05                                        # optional

    [metrics.attribution_accuracy]
    min = 0.5
    max_drop = 0.02

    [metrics.merge_violation_rate_applied]
    max = 0.0
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hy_eval._toml import read_toml
from hy_eval.harness._compare import RunOutcomes, compare, load_run
from hy_eval.harness._scoring import ACCURACY_METRICS, METRICS

BASELINES_DIR = Path("reports/baselines")
GATE_KEYS = frozenset({"min", "max", "max_drop", "max_rise"})


class GateConfigError(ValueError):
    pass


@dataclass
class Gates:
    path: str
    metrics: dict[str, dict[str, float]]
    baseline: str | None = None
    alpha: float = 0.05


@dataclass
class GateResult:
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    comparison: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return not self.failures


def load_gates(path: str | Path) -> Gates:
    data = read_toml(path, "gates file", GateConfigError)
    unknown_top = set(data) - {"baseline", "alpha", "metrics"}
    if unknown_top:
        raise GateConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown_top))}")
    metrics: dict[str, dict[str, float]] = {}
    for name, spec in (data.get("metrics") or {}).items():
        if name not in METRICS:
            raise GateConfigError(
                f"{path}: metrics.{name}: unknown metric (known: {', '.join(METRICS)})"
            )
        if not isinstance(spec, dict) or set(spec) - GATE_KEYS:
            raise GateConfigError(
                f"{path}: metrics.{name}: allowed keys are {', '.join(sorted(GATE_KEYS))}"
            )
        try:
            metrics[name] = {k: float(v) for k, v in spec.items()}
        except (TypeError, ValueError):
            raise GateConfigError(f"{path}: metrics.{name}: thresholds must be numbers") from None
    if not metrics:
        raise GateConfigError(f"{path}: no [metrics.<name>] gate")
    alpha = data.get("alpha", 0.05)
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise GateConfigError(f"{path}: alpha must be a number between 0 and 1")
    return Gates(str(path), metrics, data.get("baseline"), float(alpha))


#: A suite name that is one plain file name: no folder separator, no "..", no NUL.
_SAFE_NAME = re.compile(r"[\w][\w.+ -]{0,99}")


def default_baseline_path(suite: Any) -> Path:
    """``reports/baselines/<suite>.json``. The suite name comes from a run's manifest and
    summary, which anyone can edit: a name that is not one plain file name is refused, so
    that nothing is written outside ``reports/baselines/`` (issue 14)."""
    if not isinstance(suite, str) or not _SAFE_NAME.fullmatch(suite) or ".." in suite:
        raise GateConfigError(
            f"suite name {suite!r} is not a plain file name; give the baseline file with --out"
            " (bless) or --baseline (run)"
        )
    return BASELINES_DIR / f"{suite}.json"


def bless(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the baseline for a finished run. Explicit only: nothing else calls this."""
    run = load_run(run_dir)
    summary_path = Path(run_dir) / "summary.json"
    if not summary_path.is_file():
        raise GateConfigError(f"{run_dir}: no summary.json (the run did not finish)")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    m = run.meta
    data = {
        "suite": m["suite"],
        "dataset_hash": m["dataset_hash"],
        "prompt_hashes": m["prompt_hashes"],
        "provider": m["provider"],
        "model": m["model"],
        "variant": m["params"]["variant"],
        "guard": m["params"]["guard"],
        "blessed_from": str(run_dir),
        "blessed_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git": m.get("git"),
        "metrics": {k: v["value"] for k, v in summary["metrics"].items()},
        "cases": {
            cid: {
                "passed": run.passed[cid],
                "counts": {k: list(v) for k, v in run.counts[cid].items()},
                "outputs": run.outputs[cid],
            }
            for cid in sorted(run.counts)
        },
    }
    path = Path(out) if out else default_baseline_path(m["suite"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    return path


def load_baseline(path: str | Path) -> RunOutcomes:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateConfigError(
            f"{path}: no baseline; write one with 'hy-eval baseline bless RUN_DIR'"
        ) from None
    counts = {
        cid: {k: (float(v[0]), float(v[1])) for k, v in c["counts"].items()}
        for cid, c in data["cases"].items()
    }
    return RunOutcomes(
        label=f"baseline {data['provider']}:{data['model']}/{data['variant']}",
        dataset_hash=data["dataset_hash"],
        counts=counts,
        passed={cid: c["passed"] for cid, c in data["cases"].items()},
        outputs={cid: c.get("outputs", {}) for cid, c in data["cases"].items()},
        meta=data,
    )


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def evaluate(
    gates: Gates, summary: dict[str, Any], run_dir: str | Path, baseline_path: str | Path | None
) -> GateResult:
    """Check a finished run against the gates and (when there is one) the baseline."""
    result = GateResult()
    values = {k: v["value"] for k, v in summary["metrics"].items()}
    cmp: dict[str, Any] | None = None
    wants_baseline = any(("max_drop" in s or "max_rise" in s) for s in gates.metrics.values())
    path = baseline_path or gates.baseline or default_baseline_path(summary["suite"])
    if wants_baseline:
        base = load_baseline(path)
        cmp = compare(base, load_run(run_dir), common_only=True)
        if base.dataset_hash != summary["dataset_hash"]:
            result.warnings.append(
                f"the baseline {path} was blessed on another dataset version; "
                f"compared on the {cmp['cases']} shared case ids"
            )
        result.comparison = cmp
    for name, spec in gates.metrics.items():
        value = values.get(name)
        if value is None:
            result.warnings.append(f"{name}: no value in this run (nothing to check)")
            continue
        entry = summary["metrics"][name]
        ci = f"[{_fmt(entry['ci'][0])}, {_fmt(entry['ci'][1])}]"
        if "min" in spec and value < spec["min"]:
            result.failures.append(
                f"{name} = {value:.3f} {ci} is below the floor {spec['min']:.3f}"
            )
        if "max" in spec and value > spec["max"]:
            result.failures.append(
                f"{name} = {value:.3f} {ci} is above the ceiling {spec['max']:.3f}"
            )
        if cmp is None or ("max_drop" not in spec and "max_rise" not in spec):
            continue
        d = cmp["metrics"][name]
        if d["diff"] is None:
            continue
        higher = name in ACCURACY_METRICS
        worse = -d["diff"] if higher else d["diff"]
        limit = spec.get("max_drop" if higher else "max_rise", 0.0)
        if worse <= limit:
            continue
        p = cmp["mcnemar"]["p_value"] if name == "case_pass" else d["p_value"]
        significant = (d["ci"][1] < 0) if higher else (d["ci"][0] > 0)
        if name == "case_pass":
            significant = significant or p < gates.alpha
        flipped = [f["id"] for f in cmp["flipped"] if f["change"] == "broken"]
        what = (
            f"{name} = {value:.3f} vs baseline {d['a']:.3f}: "
            f"{'drop' if higher else 'rise'} {worse:.3f} > allowed {limit:.3f}; "
            f"B-A {d['diff']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}], p = {p:.4f}, "
            f"n = {d['n']}"
        )
        if significant and p < gates.alpha:
            cases = ", ".join(flipped[:15]) + (" ..." if len(flipped) > 15 else "")
            result.failures.append(f"{what}; broken cases: {cases or 'none'}")
        else:
            result.warnings.append(f"{what}; not significant on this many cases, not failing")
    return result


def gate_text(result: GateResult) -> str:
    lines = [f"gate FAILED: {f}" for f in result.failures]
    lines += [f"gate warning: {w}" for w in result.warnings]
    if result.ok:
        lines.append("gates: all hold")
    return "\n".join(lines)

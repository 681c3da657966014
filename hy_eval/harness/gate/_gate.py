"""Baselines and regression gates (rule E5).

A baseline is a file written only by ``hy-eval baseline bless RUN_DIR``: the run's
metrics, per-case outcomes, dataset and prompt hashes, provider and model. A gates file
(TOML) sets per metric an absolute floor (``min``) or ceiling (``max``), and a largest
allowed drop (``max_drop``, for higher-is-better metrics) or rise (``max_rise``, for
rates) against the baseline. A baseline gate fails only when a one-sided test finds the
run worse than the baseline by more than the allowed amount, with Holm's correction
across the gated metrics at the file's ``alpha`` (E5; docs/ci.md):

    baseline = "reports/baselines/multi_speaker.json"   # optional
    alpha = 0.05                                        # optional

    [metrics.attribution_accuracy]
    min = 0.5
    max_drop = 0.02

    [metrics.merge_violation_rate_applied]
    max = 0.0

    [consistency.rename]                                # needs run --perturb rename
    min = 0.95
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hy_eval._toml import read_toml
from hy_eval.harness.analysis import (
    BOOTSTRAP_SAMPLES,
    SEED,
    Z_80,
    RunOutcomes,
    compare,
    format_p,
    holm,
    run_outcomes,
    z_quantile,
)
from hy_eval.harness.runlog import (
    Baseline,
    Comparison,
    MetricEntry,
    RunFolderError,
    RunSummary,
    WorseTest,
    read_baseline,
    read_run,
    write_baseline,
)
from hy_eval.harness.scoring import ACCURACY_METRICS, METRICS

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
    #: Perturbation -> {"min": floor} on its consistency.
    consistency: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class GateResult:
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Gates that hold, with the effect each can see.
    notes: list[str] = field(default_factory=list)
    #: Baseline gates with no shared case to test: neither held nor failed.
    untested: list[str] = field(default_factory=list)
    #: Warnings of a gate whose run was worse than allowed but not significantly so.
    unproven: int = 0
    comparison: Comparison | None = None

    @property
    def ok(self) -> bool:
        return not self.failures


def load_gates(path: str | Path) -> Gates:
    data = read_toml(path, "gates file", GateConfigError)
    unknown_top = set(data) - {"baseline", "alpha", "metrics", "consistency"}
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
        # A drop is tested on higher-is-better metrics, a rise on rates; the other key
        # would name a hypothesis the gate does not test.
        wrong = "max_rise" if name in ACCURACY_METRICS else "max_drop"
        if wrong in spec:
            raise GateConfigError(
                f"{path}: metrics.{name}: {wrong} does not apply "
                f"(use {'max_drop' if wrong == 'max_rise' else 'max_rise'} for this metric)"
            )
        if metrics[name].get("max_drop", 0.0) < 0 or metrics[name].get("max_rise", 0.0) < 0:
            raise GateConfigError(f"{path}: metrics.{name}: max_drop and max_rise must be >= 0")
    consistency = _consistency_gates(path, data.get("consistency") or {})
    if not metrics and not consistency:
        raise GateConfigError(f"{path}: no [metrics.<name>] or [consistency.<name>] gate")
    alpha = data.get("alpha", 0.05)
    # Below 0.5: the gate's CI is at 1 - 2 alpha (see _drop_verdict).
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 0.5:
        raise GateConfigError(f"{path}: alpha must be a number between 0 and 0.5")
    return Gates(str(path), metrics, data.get("baseline"), float(alpha), consistency)


def _consistency_gates(path: str | Path, table: Any) -> dict[str, dict[str, float]]:
    """``[consistency.<perturbation>] min = 0.95``: a floor on the share of verdicts the
    perturbation leaves unchanged."""
    from hy_eval.harness.datasets import PERTURBATIONS

    out: dict[str, dict[str, float]] = {}
    if not isinstance(table, dict):
        raise GateConfigError(f"{path}: consistency: use [consistency.<perturbation>] tables")
    for name, spec in table.items():
        where = f"{path}: consistency.{name}"
        if name not in PERTURBATIONS:
            raise GateConfigError(
                f"{where}: unknown perturbation (known: {', '.join(PERTURBATIONS)})"
            )
        if not isinstance(spec, dict) or set(spec) != {"min"}:
            raise GateConfigError(f"{where}: the one allowed key is min")
        floor = spec["min"]
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 <= floor <= 1:
            raise GateConfigError(f"{where}: min must be a number between 0 and 1")
        out[name] = {"min": float(floor)}
    return out


def consistency_checks(gates: Gates, summary: RunSummary, result: GateResult) -> None:
    """Each consistency floor against the run's ``perturbations`` section: the observed
    value, as ``min`` on a metric. A gated perturbation the run did not do fails."""
    for name, spec in gates.consistency.items():
        section = summary.perturbations.get(name)
        if section is None:
            result.failures.append(
                f"consistency.{name}: the run has no {name} perturbation "
                f"(run with --perturb {name})"
            )
            continue
        entry = section.consistency
        if entry.value is None:
            result.untested.append(f"consistency.{name}: no case paired")
        elif entry.value < spec["min"]:
            lo, hi = entry.ci
            result.failures.append(
                f"consistency.{name} = {entry.value:.3f} [{_fmt(lo)}, {_fmt(hi)}] is below the "
                f"floor {spec['min']:.3f} ({section.changed_cases_count} cases with a check "
                "changed)"
            )


#: A suite name that is one plain file name: no folder separator, no "..", no NUL.
_SAFE_NAME = re.compile(r"[\w][\w.+ -]{0,99}")


def default_baseline_path(suite: Any) -> Path:
    """``reports/baselines/<suite>.json``. The suite name comes from a run's manifest and
    summary, which anyone can edit: a name that is not one plain file name is refused, so
    that nothing is written outside ``reports/baselines/``."""
    if not isinstance(suite, str) or not _SAFE_NAME.fullmatch(suite) or ".." in suite:
        raise GateConfigError(
            f"suite name {suite!r} is not a plain file name; give the baseline file with --out"
            " (bless) or --baseline (run)"
        )
    return BASELINES_DIR / f"{suite}.json"


def replacement_problem(path: Path, new: Baseline) -> str | None:
    """Why the baseline ``new`` should not silently replace the one at ``path``: it covers
    fewer cases, or another suite or matcher (a 12-case run blessed over the committed
    457-case baseline would gate every later run on 12 cases). ``None`` when there is no
    readable baseline there or nothing is lost."""
    try:
        old = read_baseline(path)
    except (OSError, RunFolderError):
        return None
    before, after = len(old.cases), len(new.cases)
    reasons = []
    if after < before:
        reasons.append(f"{after} cases where it has {before}")
    for key, was, now in (("suite", old.suite, new.suite), ("matcher", old.matcher, new.matcher)):
        if was != now:
            reasons.append(f"{key} {now} where it has {was}")
    if not reasons:
        return None
    return (
        f"{path}: the run would replace this baseline with {', '.join(reasons)}; "
        "bless it with --force to replace it anyway, or write it elsewhere with --out"
    )


def bless(
    run_dir: str | Path, out: str | Path | None = None, *, force: bool = False
) -> tuple[Path, int | None]:
    """Write the baseline for a finished run. Explicit only: nothing else calls this.
    Refuses (``GateConfigError``) to replace a baseline over more cases, or of another
    suite or matcher, unless ``force``. Returns the file and the cases of the baseline it
    replaced (None: there was none, or none that reads as one)."""
    run = run_outcomes(run_dir)
    log = read_run(run_dir)
    try:
        summary = log.summary()
    except RunFolderError as exc:
        raise GateConfigError(str(exc)) from None
    if summary is None:
        raise GateConfigError(f"{run_dir}: no summary.json (the run did not finish)")
    m = log.manifest
    baseline = Baseline.model_validate(
        {
            "suite": m.suite,
            "dataset_hash": m.dataset_hash,
            "prompt_hashes": m.prompt_hashes,
            "provider": m.provider,
            "model": m.model,
            "variant": m.params.variant,
            "guard": m.params.guard,
            "matcher": m.matcher,
            "blessed_from": str(run_dir),
            "blessed_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "git": m.git,
            "metrics": {k: v.value for k, v in summary.metrics.items()},
            "cases": {
                cid: {
                    "passed": run.passed[cid],
                    "counts": run.counts[cid],
                    "outputs": run.outputs[cid],
                }
                for cid in sorted(run.counts)
            },
        }
    )
    path = Path(out) if out else default_baseline_path(m.suite)
    problem = None if force else replacement_problem(path, baseline)
    if problem:
        raise GateConfigError(problem)
    try:
        before: int | None = len(read_baseline(path).cases)
    except (OSError, RunFolderError):
        before = None
    path.parent.mkdir(parents=True, exist_ok=True)
    write_baseline(path, baseline)
    return path, before


def load_baseline(path: str | Path) -> RunOutcomes:
    """The baseline at ``path`` as a run to compare with; ``GateConfigError`` (one line)
    when there is none or it is not a baseline."""
    try:
        data = read_baseline(Path(path))
    except FileNotFoundError:
        raise GateConfigError(
            f"{path}: no baseline; write one with 'hy-eval baseline bless RUN_DIR'"
        ) from None
    except RunFolderError as exc:
        raise GateConfigError(str(exc)) from None
    return RunOutcomes(
        label=data.label,
        dataset_hash=data.dataset_hash,
        counts={cid: dict(c.counts) for cid, c in data.cases.items()},
        passed={cid: c.passed for cid, c in data.cases.items()},
        outputs={cid: c.outputs for cid, c in data.cases.items()},
        meta=data,
    )


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def evaluate(
    gates: Gates, summary: RunSummary, run_dir: str | Path, baseline_path: str | Path | None
) -> GateResult:
    """Check a finished run against the gates and (when there is one) the baseline."""
    wants_baseline = any(("max_drop" in s or "max_rise" in s) for s in gates.metrics.values())
    path = baseline_path or gates.baseline or default_baseline_path(summary.suite)
    base = load_baseline(path) if wants_baseline else None
    result = evaluate_outcomes(gates, summary.metrics, run_outcomes(run_dir), base)
    consistency_checks(gates, summary, result)
    if base is not None and base.dataset_hash != summary.dataset_hash:
        assert result.comparison is not None
        result.warnings.insert(
            0,
            f"the baseline {path} was blessed on another dataset version; "
            f"compared on the {result.comparison.cases} shared case ids",
        )
    return result


def _absolute_checks(gates: Gates, metrics: dict[str, MetricEntry], result: GateResult) -> None:
    """``min`` and ``max``: thresholds on the observed value, not tests (no error rate
    to control: they fail whenever the value is past them)."""
    for name, spec in gates.metrics.items():
        if "min" not in spec and "max" not in spec:
            continue
        entry = metrics.get(name)
        value = entry.value if entry else None
        if entry is None or value is None:
            result.untested.append(f"{name}: no value in this run")
            continue
        lo, hi = entry.ci
        ci = f" [{_fmt(lo)}, {_fmt(hi)}]" if lo is not None else ""
        if "min" in spec and value < spec["min"]:
            result.failures.append(f"{name} = {value:.3f}{ci} is below the floor {spec['min']:.3f}")
        if "max" in spec and value > spec["max"]:
            result.failures.append(
                f"{name} = {value:.3f}{ci} is above the ceiling {spec['max']:.3f}"
            )


def _p_text(p: float, samples: int | None, times: int = 1) -> str:
    """An adjusted resampling p-value of 0 is below ``times`` in ``samples``; an exact or
    score test's p too small for four decimals reads ``< 0.0001`` (not ``0.0e+00``)."""
    if samples and p == 0:
        return f"< {times}/{samples}"
    if not samples and p < 0.0001:
        return "< 0.0001"
    return format_p(p).removeprefix("p = ")


def evaluate_outcomes(
    gates: Gates,
    metrics: dict[str, MetricEntry],
    run: RunOutcomes,
    base: RunOutcomes | None,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
) -> GateResult:
    """The gates on one run's outcomes (``metrics``: its summary's metrics, for ``min`` and
    ``max``) against a baseline's (for ``max_drop`` and ``max_rise``).

    Each baseline gate is a one-sided test of "worse than the baseline by more than the
    allowed amount" (see ``compare``'s ``limits``); Holm's procedure across the gated
    metrics keeps the chance that a run from the baseline's own process fails any of them
    at ``alpha``. docs/ci.md gives the measured rates.
    """
    result = GateResult()
    _absolute_checks(gates, metrics, result)
    limits = {
        name: spec.get("max_drop" if name in ACCURACY_METRICS else "max_rise", 0.0)
        for name, spec in gates.metrics.items()
        if "max_drop" in spec or "max_rise" in spec
    }
    if base is None or not limits:
        return result
    alpha = gates.alpha
    cmp = compare(
        base,
        run,
        common_only=True,
        alpha=alpha,
        level=1 - 2 * alpha,
        limits=limits,
        samples=samples,
        seed=seed,
    )
    result.comparison = cmp
    family = [m for m in limits if cmp.metric(m).diff is not None]
    for name in limits:
        if name not in family:
            result.untested.append(f"{name}: no shared case has it in both runs")
    adjusted = holm([_worse_test(cmp, m).p for m in family])
    z_mde = z_quantile(1 - alpha / max(1, len(family))) + Z_80
    for name, p_adj in zip(family, adjusted, strict=True):
        _drop_verdict(name, cmp, p_adj, len(family), alpha, z_mde, result)
    return result


def _worse_test(cmp: Comparison, name: str) -> WorseTest:
    """The one-sided test ``compare`` made for gated metric ``name``."""
    test = cmp.metric(name).worse_test
    assert test is not None, f"compare made no test for the gated metric {name}"
    return test


def _drop_verdict(
    name: str,
    cmp: Comparison,
    p_adj: float,
    family: int,
    alpha: float,
    z_mde: float,
    result: GateResult,
) -> None:
    """One baseline gate's verdict and message: both values on the shared cases, the
    difference with its CI at the level the one-sided test at ``alpha`` matches, the raw
    and Holm-adjusted p, the effect the gate can see, and the cases that got worse."""
    d = cmp.metric(name)
    test = _worse_test(cmp, name)
    assert d.a is not None and d.b is not None and d.diff is not None  # in the family
    limit = test.limit
    higher = d.higher_is_better
    worse = (-d.diff if higher else d.diff) + 0.0  # + 0.0: no "-0.000"
    word = "drop" if higher else "rise"
    mde = None if d.se is None else limit + z_mde * d.se
    level = round(100 * cmp.ci_level)
    lo, hi = d.ci
    what = (
        f"{name} = {d.b:.3f} vs baseline {d.a:.3f} on the {d.n} shared cases: "
        f"{word} {worse:.3f}, allowed {limit:.3f}; B-A {d.diff:+.3f} "
        f"[{lo:+.3f}, {hi:+.3f}] ({level}% CI); one-sided {test.method} "
        f"p {_p_text(test.p, test.samples)}, Holm over {family} gated metrics "
        f"{_p_text(p_adj, test.samples, family)} (alpha {alpha:g})"
    )
    sees = "" if mde is None else _sees(word, mde, d.a, higher, d.n)
    if p_adj < alpha and worse > limit:
        cases = d.worse_cases
        listed = ", ".join(cases[:15]) + (f" ... ({len(cases)} in all)" if len(cases) > 15 else "")
        result.failures.append(f"{what}; worse on {name}: {listed or 'none'}")
    elif worse > limit:
        result.unproven += 1
        result.warnings.append(f"{what}; not significant on this many cases, not failing{sees}")
    else:
        result.notes.append(f"{name}: {word} {worse:+.3f} within {limit:.3f}{sees}")


def _sees(word: str, mde: float, base: float, higher: bool, n: int) -> str:
    """The effect a gate sees with 80% power, in words a reader can check against the
    metric's range: a rate cannot rise above 1 nor an accuracy drop below 0, so a gate
    that needs more than the room left says it has too few cases."""
    room = base if higher else 1.0 - base
    if mde <= room:
        return f"; this gate sees a {word} of {mde:.3f} or more (80% power)"
    end = "0" if higher else "1"
    return (
        f"; on {n} cases this gate would see only a {word} of {mde:.3f} (80% power), more "
        f"than the {room:.3f} left from {base:.3f} to {end}: too few cases to gate it"
    )


def gate_text(result: GateResult) -> str:
    """Every gate's line, then one verdict line that says "all hold" only when every gate
    was tested and none was worse than allowed."""
    lines = [f"gate FAILED: {f}" for f in result.failures]
    lines += [f"gate UNTESTED: {u}" for u in result.untested]
    lines += [f"gate warning: {w}" for w in result.warnings]
    lines += [f"gate: {n}" for n in result.notes]
    if result.ok and not result.untested and not result.unproven:
        lines.append("gates: all hold")
    elif result.ok:
        parts = []
        if result.untested:
            parts.append(f"{len(result.untested)} could not be tested (no shared case)")
        if result.unproven:
            parts.append(
                f"{result.unproven} worse than allowed but not significant on this many cases"
            )
        lines.append(f"gates: none failed, but {' and '.join(parts)}; read the lines above")
    return "\n".join(lines)

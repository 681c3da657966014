"""Consistency of a perturbed run against its base run (docs/metrics.md): the share of
(case, check) verdicts of the base run that the perturbed run gives unchanged.

A case's checks are keyed by kind and occurrence (``fact#0``, ``absent#1``) and paired as
``changed_checks`` says. ``hy-eval compare`` uses the same pairing for its "changed" cases.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hy_eval.harness.analysis._compare_input import checked_records
from hy_eval.harness.analysis._outputs_diff import structural_diff
from hy_eval.harness.analysis._stats import ratios_with_ci
from hy_eval.harness.datasets import replace_names
from hy_eval.harness.runlog import (
    RECORDS_NAME,
    CaseRecord,
    ConsistencyResult,
    PerturbationSection,
    PerturbFile,
    RunSummary,
    read_perturb_file,
    read_summary,
)

#: Checks that a record carries only when they fail.
ONLY_ON_FAILURE = ("parse", "error")

#: The check kind that holds each metric's verdicts, for the metrics a system under test
#: may not measure (``runlog`` records list them in ``score.not_measured``). A check whose
#: metric either side cannot measure leaves the family: an external system never has a
#: ``parse`` check, so our pipeline's failed parse is no change against it.
CHECK_OF_METRIC = {
    "parse_failure_rate": "parse",
    "profile_name_accuracy": "profile_name",
    "profile_leak_rate": "profile_absent",
    "operation_accuracy": "operations",
    "untouched_violation_rate": "untouched",
    "merge_violation_rate_applied": "merge",
    "misattribution_rate": "absent",
}


def unmeasured_checks(*not_measured: Iterable[str]) -> frozenset[str]:
    """The check kinds that leave a comparison's family: those of the metrics any of the
    ``not_measured`` lists (one per run, or per record) names."""
    return frozenset(
        CHECK_OF_METRIC[m] for names in not_measured for m in names if m in CHECK_OF_METRIC
    )


def records_unmeasured(*runs: Iterable[CaseRecord]) -> frozenset[str]:
    """``unmeasured_checks`` of every record of ``runs``."""
    return unmeasured_checks(*(r.score.not_measured or () for run in runs for r in run))


#: Changed cases (at least one check verdict changed) listed in full in summary.json and
#: compare's JSON (the rest counted).
MAX_CHANGED = 50


def verdicts_of(record: CaseRecord) -> dict[str, bool]:
    """A record's check verdicts keyed by kind and occurrence: ``{"fact#0": True, ...}``."""
    seen: Counter[str] = Counter()
    out: dict[str, bool] = {}
    for check in record.score.checks:
        out[f"{check.check}#{seen[check.check]}"] = check.ok
        seen[check.check] += 1
    return out


def changed_checks(
    a: Mapping[str, bool], b: Mapping[str, bool], leave: frozenset[str] = frozenset()
) -> tuple[int, list[str]]:
    """The number of checks paired between two verdict sets, and the keys whose verdict
    differs. Paired are the checks both have, and ``parse``/``error`` checks of either
    (missing means passed). When either case errored, every check of the other is paired
    too (missing means failed: an errored case checks nothing). A check only one gold
    has (swap_perspective's L0 list) is not paired, and neither is a check of a kind in
    ``leave`` (a metric one side cannot measure, ``unmeasured_checks``)."""
    errored = any(k.startswith("error#") for k in (*a, *b))

    def paired(k: str) -> bool:
        kind = k.split("#")[0]
        if kind in leave:
            return False
        return errored or (k in a and k in b) or kind in ONLY_ON_FAILURE

    keys = sorted(k for k in set(a) | set(b) if paired(k))

    def ok(v: Mapping[str, bool], k: str) -> bool:
        return v.get(k, k.split("#")[0] in ONLY_ON_FAILURE)

    return len(keys), [k for k in keys if ok(a, k) != ok(b, k)]


def changed_ids(
    base: Iterable[CaseRecord], other: Iterable[CaseRecord], leave: frozenset[str] = frozenset()
) -> set[str]:
    """The ids of the cases with at least one check verdict that differs between the two
    runs on a shared (case, repeat), checks paired as ``changed_checks`` pairs them."""
    b = {r.key: r for r in other}
    return {
        r.id
        for r in base
        if r.key in b and changed_checks(verdicts_of(r), verdicts_of(b[r.key]), leave)[1]
    }


def _mapped_facts(rec: CaseRecord, subjects: Mapping[str, str]) -> list[dict[str, str]]:
    """A record's facts as (subject, owner, text), with the perturbed case's names mapped
    back to the original's, so that a diff shows what changed beyond the renaming."""
    back = {k.casefold(): v for k, v in subjects.items()}
    names = [k for k in subjects if k not in ("user", "assistant")]
    to_old = {n: subjects[n] for n in names}
    rows = []
    for f in rec.score.facts:
        subject = f.subject
        name = subject.split(":", 1)[1] if subject.startswith("named:") else subject
        if name in back:
            old = back[name]
            subject = old if old in ("user", "assistant") else f"named:{old.casefold()}"
        text = f.text
        if to_old:
            text = replace_names(text, to_old, names)
        rows.append({"subject": subject, "owner": f.owner, "text": text})
    return rows


def consistency(
    base: Iterable[CaseRecord],
    perturbed: Iterable[CaseRecord],
    subjects: Mapping[str, Mapping[str, str]] | None = None,
) -> ConsistencyResult:
    """Consistency of ``perturbed`` against ``base`` on their shared (case, repeat) keys:
    the value with its CI (cases resampled whole), a fragility table by rule and tag, and
    the changed cases (at least one check verdict changed) with a diff of their facts.
    ``subjects`` (case id -> perturbed subject -> original) maps names back for the diff.
    Checks of a metric either run cannot measure are left out (``records_unmeasured``)."""
    subjects = subjects or {}
    base, perturbed = list(base), list(perturbed)
    leave = records_unmeasured(base, perturbed)
    a = {r.key: r for r in base}
    b = {r.key: r for r in perturbed}
    keys = sorted(k for k in a if k in b)  # records are in finishing order
    groups: dict[str, list[int]] = {}
    nums, dens, changed_cases = [], [], []
    for i, k in enumerate(keys):
        ra, rb = a[k], b[k]
        total, changed = changed_checks(verdicts_of(ra), verdicts_of(rb), leave)
        nums.append(total - len(changed))
        dens.append(total)
        for label in [f"rule:{r}" for r in ra.rules] + [f"tag:{t}" for t in ra.tags]:
            groups.setdefault(label, []).append(i)
        if changed:
            subj = subjects.get(ra.id, {})
            changed_cases.append(
                {
                    "id": ra.id,
                    "repeat": ra.repeat,
                    "passed": [ra.score.passed, rb.score.passed],
                    "changed": changed,
                    "facts_diff": structural_diff(
                        {"facts": _mapped_facts(ra, {})}, {"facts": _mapped_facts(rb, subj)}
                    ),
                }
            )
    labels = sorted(groups)
    num = np.zeros((len(keys), 1 + len(labels)))
    den = np.zeros_like(num)
    num[:, 0], den[:, 0] = nums, dens
    for j, label in enumerate(labels, start=1):
        rows = groups[label]
        num[rows, j] = np.asarray(nums, dtype=float)[rows]
        den[rows, j] = np.asarray(dens, dtype=float)[rows]
    entries = ratios_with_ci(num, den)
    changes = [n < d for n, d in zip(nums, dens, strict=True)]
    fragility = {
        kind: {
            label.split(":", 1)[1]: {**_short(e), "changed": sum(changes[i] for i in groups[label])}
            for label, e in zip(labels, entries[1:], strict=True)
            if label.startswith(kind + ":")
        }
        for kind in ("rule", "tag")
    }
    return ConsistencyResult.model_validate(
        {
            "consistency": _short(entries[0]),
            "cases": len(keys),
            "checks": int(sum(dens)),
            "checks_changed": int(sum(dens) - sum(nums)),
            "only_in_base": len(set(a) - set(b)),
            "fragility": fragility,
            "changed_count": len(changed_cases),
            "changed_cases": changed_cases[:MAX_CHANGED],
        }
    )


def _short(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: entry[k] for k in ("value", "ci", "n", "num", "den", "small_n")}


def _read_records(run_dir: Path) -> list[CaseRecord]:
    """The records of ``run_dir``, each checked (``RunFolderError`` at a bad line)."""
    return list(checked_records(run_dir / RECORDS_NAME))


def perturbation_section(
    base_dir: Path, base_summary: RunSummary, sub_dir: Path
) -> PerturbationSection:
    """One perturbation's part of the base run's summary: what ran and was skipped, the
    metrics of both runs, and the consistency (see ``consistency``). ``RunFolderError``
    (one line) for a perturbed folder whose files cannot be read."""
    info = read_perturb_file(sub_dir) or PerturbFile()
    subjects = {cid: c.subjects for cid, c in info.cases.items()}
    pert = read_summary(sub_dir) or RunSummary()
    metrics: dict[str, Any] = {}
    for m, e in base_summary.metrics.items():
        p = pert.metrics.get(m)
        metrics[m] = {
            "base": e.value,
            "perturbed": p.value if p else None,
            "perturbed_ci": p.ci if p else None,
        }
    result = consistency(_read_records(base_dir), _read_records(sub_dir), subjects)
    return PerturbationSection.model_validate(
        {
            "run_dir": str(sub_dir.relative_to(base_dir)),
            "seed": info.seed,
            "skipped": len(info.skipped),
            "skipped_cases": info.skipped,
            "metrics": metrics,
            **result.to_data(),
        }
    )

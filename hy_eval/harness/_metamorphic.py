"""Metamorphic runs: a suite run as it is and under perturbations
(``_perturb.py``), and the consistency of the verdicts between the two.

``run --perturb rename,order`` runs the base suite into the run folder, then each
perturbation into ``RUN/perturb/<name>/`` (a run folder of its own, its manifest's
``params.perturb`` naming the perturbation, ``perturb.json`` listing the skipped cases and
each case's subject map). The base run's ``summary.json`` gets a ``perturbations`` section
and ``report.md`` a section per perturbation. ``hy-eval compare RUN RUN/perturb/<name>``
shows the same consistency; docs/metrics.md defines it.

Consistency: the share of (case, check) verdicts of the base run that the perturbed run
gives unchanged. A case's checks are keyed by kind and occurrence (``fact#0``,
``absent#1``) and paired as ``changed_checks`` says.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from hy_eval._terminal import echo
from hy_eval.harness._dataset import load_suite, select_cases
from hy_eval.harness._outputs_diff import structural_diff
from hy_eval.harness._perturb import perturb_suite
from hy_eval.harness._plan import RunError
from hy_eval.harness._rename_text import replace_names
from hy_eval.harness._stats import ratios_with_ci

#: Checks that a record carries only when they fail.
ONLY_ON_FAILURE = ("parse", "error")
#: Changed cases (at least one check verdict changed) listed in full in summary.json and
#: compare's JSON (the rest counted).
MAX_CHANGED = 50
PERTURB_FILE = "perturb.json"


def verdicts_of(record: Mapping[str, Any]) -> dict[str, bool]:
    """A record's check verdicts keyed by kind and occurrence: ``{"fact#0": True, ...}``."""
    seen: Counter[str] = Counter()
    out: dict[str, bool] = {}
    for check in record["score"]["checks"]:
        kind = check["check"]
        out[f"{kind}#{seen[kind]}"] = bool(check["ok"])
        seen[kind] += 1
    return out


def changed_checks(a: Mapping[str, bool], b: Mapping[str, bool]) -> tuple[int, list[str]]:
    """The number of checks paired between two verdict sets, and the keys whose verdict
    differs. Paired are the checks both have, and ``parse``/``error`` checks of either
    (missing means passed). When either case errored, every check of the other is paired
    too (missing means failed: an errored case checks nothing). A check only one gold
    has (swap_perspective's L0 list) is not paired."""
    errored = any(k.startswith("error#") for k in (*a, *b))

    def paired(k: str) -> bool:
        return errored or (k in a and k in b) or k.split("#")[0] in ONLY_ON_FAILURE

    keys = sorted(k for k in set(a) | set(b) if paired(k))

    def ok(v: Mapping[str, bool], k: str) -> bool:
        return v.get(k, k.split("#")[0] in ONLY_ON_FAILURE)

    return len(keys), [k for k in keys if ok(a, k) != ok(b, k)]


def changed_ids(base: Iterable[Mapping[str, Any]], other: Iterable[Mapping[str, Any]]) -> set[str]:
    """The ids of the cases with at least one check verdict that differs between the two
    runs on a shared (case, repeat), checks paired as ``changed_checks`` pairs them."""
    b = {_key(r): r for r in other}
    return {
        r["id"]
        for r in base
        if _key(r) in b and changed_checks(verdicts_of(r), verdicts_of(b[_key(r)]))[1]
    }


def _key(rec: Mapping[str, Any]) -> str:
    return f"{rec['id']}#{rec.get('repeat', 0)}"


def _mapped_facts(rec: Mapping[str, Any], subjects: Mapping[str, str]) -> list[dict[str, str]]:
    """A record's facts as (subject, owner, text), with the perturbed case's names mapped
    back to the original's, so that a diff shows what changed beyond the renaming."""
    back = {k.casefold(): v for k, v in subjects.items()}
    names = [k for k in subjects if k not in ("user", "assistant")]
    to_old = {n: subjects[n] for n in names}
    rows = []
    for f in rec.get("score", {}).get("facts", []):
        subject = f["subject"]
        name = subject.split(":", 1)[1] if subject.startswith("named:") else subject
        if name in back:
            old = back[name]
            subject = old if old in ("user", "assistant") else f"named:{old.casefold()}"
        text = f["text"]
        if to_old:
            text = replace_names(text, to_old, names)
        rows.append({"subject": subject, "owner": f["owner"], "text": text})
    return rows


def consistency(
    base: Iterable[Mapping[str, Any]],
    perturbed: Iterable[Mapping[str, Any]],
    subjects: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Consistency of ``perturbed`` against ``base`` on their shared (case, repeat) keys:
    the value with its CI (cases resampled whole), a fragility table by rule and tag, and
    the changed cases (at least one check verdict changed) with a diff of their facts.
    ``subjects`` (case id -> perturbed subject -> original) maps names back for the diff."""
    subjects = subjects or {}
    a = {_key(r): r for r in base}
    b = {_key(r): r for r in perturbed}
    keys = sorted(k for k in a if k in b)  # records are in finishing order
    groups: dict[str, list[int]] = {}
    nums, dens, changed_cases = [], [], []
    for i, k in enumerate(keys):
        ra, rb = a[k], b[k]
        total, changed = changed_checks(verdicts_of(ra), verdicts_of(rb))
        nums.append(total - len(changed))
        dens.append(total)
        for label in [f"rule:{r}" for r in ra["rules"]] + [f"tag:{t}" for t in ra["tags"]]:
            groups.setdefault(label, []).append(i)
        if changed:
            subj = subjects.get(ra["id"], {})
            changed_cases.append(
                {
                    "id": ra["id"],
                    "repeat": ra.get("repeat", 0),
                    "passed": [ra["score"]["passed"], rb["score"]["passed"]],
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
    return {
        "consistency": _short(entries[0]),
        "cases": len(keys),
        "checks": int(sum(dens)),
        "checks_changed": int(sum(dens) - sum(nums)),
        "only_in_base": len(set(a) - set(b)),
        "fragility": fragility,
        "changed_count": len(changed_cases),
        "changed_cases": changed_cases[:MAX_CHANGED],
    }


def _short(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: entry[k] for k in ("value", "ci", "n", "num", "den", "small_n")}


def read_perturb_file(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / PERTURB_FILE
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _read_records(run_dir: Path) -> list[dict[str, Any]]:
    from hy_eval.harness._runlog import read_record_dicts as read_records

    return list(read_records(run_dir / "cases.jsonl"))


def perturbation_section(
    base_dir: Path, base_summary: Mapping[str, Any], sub_dir: Path
) -> dict[str, Any]:
    """One perturbation's part of the base run's summary: what ran and was skipped, the
    metrics of both runs, and the consistency (see ``consistency``)."""
    info = read_perturb_file(sub_dir) or {}
    subjects = {cid: c["subjects"] for cid, c in info.get("cases", {}).items()}
    section: dict[str, Any] = {
        "run_dir": str(sub_dir.relative_to(base_dir)),
        "seed": info.get("seed"),
        "skipped": len(info.get("skipped", [])),
        "skipped_cases": info.get("skipped", []),
    }
    summary_path = sub_dir / "summary.json"
    pert = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
    section["metrics"] = {
        m: {
            "base": e["value"],
            "perturbed": pert.get("metrics", {}).get(m, {}).get("value"),
            "perturbed_ci": pert.get("metrics", {}).get(m, {}).get("ci"),
        }
        for m, e in base_summary.get("metrics", {}).items()
    }
    section.update(consistency(_read_records(base_dir), _read_records(sub_dir), subjects))
    return section


def _pct(entry: Mapping[str, Any]) -> str:
    if entry["value"] is None:
        return "n/a"
    lo, hi = entry["ci"]
    return f"{entry['value']:.3f} [{lo:.3f}, {hi:.3f}]"


def markdown_section(name: str, s: Mapping[str, Any]) -> str:
    """The report.md section of one perturbation (also compare's text, in part)."""
    lines = [
        f"\n## Perturbation `{name}`\n",
        f"{s['cases']} cases paired ({s['skipped']} skipped as not perturbable soundly); "
        f"consistency {_pct(s['consistency'])}: {s['checks'] - s['checks_changed']} of "
        f"{s['checks']} (case, check) verdicts unchanged. Run folder `{s.get('run_dir', '')}`.\n",
        "| metric | base | perturbed |",
        "|---|---|---|",
    ]
    for m, e in s.get("metrics", {}).items():
        if e["base"] is None and e["perturbed"] is None:
            continue
        cells = ["n/a" if v is None else f"{v:.3f}" for v in (e["base"], e["perturbed"])]
        lines.append(f"| {m} | {cells[0]} | {cells[1]} |")
    lines += fragility_lines(s)
    lines += ["", "| changed case | checks changed | facts diff |", "|---|---|---|"]
    for f in s["changed_cases"]:
        diff = json.dumps(f["facts_diff"], ensure_ascii=False).replace("|", "\\|")
        lines.append(f"| {f['id']} | {', '.join(f['changed'])} | {diff[:300]} |")
    if s["changed_count"] > len(s["changed_cases"]):
        lines.append(f"| ... and {s['changed_count'] - len(s['changed_cases'])} more | | |")
    return "\n".join(lines) + "\n"


def fragility_lines(s: Mapping[str, Any]) -> list[str]:
    """Rules and tags by consistency, least consistent first."""
    lines = ["", "| fragility | consistency (95% CI) | cases | changed |", "|---|---|---|---|"]
    rows = [
        (e["value"] if e["value"] is not None else 1.0, f"{kind} {label}", e)
        for kind in ("rule", "tag")
        for label, e in s["fragility"][kind].items()
    ]
    for _, label, e in sorted(rows, key=lambda r: (r[0], r[1])):
        lines.append(f"| {label} | {_pct(e)} | {e['n']} | {e['changed']} |")
    return lines


def run_with_perturbations(
    config: Any, names: list[str], seed: int = 0
) -> tuple[Path, dict[str, Any], int]:
    """The base run, then one run per perturbation under ``RUN/perturb/<name>/``; the
    base's summary.json and report.md get the perturbations' sections. Each perturbed
    folder is resumed when it holds records already."""
    from hy_eval.harness._runlog import write_json as _write_json
    from hy_eval.harness._runner import Runner

    run_dir, summary, code = Runner(config).run()
    suite = load_suite(config.suite)
    refs = select_cases(suite.refs, config.filter, config.sample, config.limit)
    sections: dict[str, Any] = {}
    for name in names:
        sub_dir = run_dir / "perturb" / name
        ps = perturb_suite(suite, refs, name, seed)
        sub_dir.mkdir(parents=True, exist_ok=True)
        _write_json(
            sub_dir / PERTURB_FILE,
            {
                "perturbation": name,
                "seed": seed,
                "skipped": [list(s) for s in ps.skipped],
                "cases": {
                    cid: {"subjects": p.subjects, "note": p.note} for cid, p in ps.results.items()
                },
            },
        )
        if ps.refs:
            resume = (sub_dir / "cases.jsonl").exists()
            sub = replace(
                config,
                out=None if resume else str(sub_dir),
                resume=str(sub_dir) if resume else None,
                perturb=name,
                perturb_seed=seed,
            )
            try:
                _, _, sub_code = Runner(sub).run()
            except RunError as exc:
                raise RunError(str(exc), exc.exit_code, perturbation=name) from None
            code = max(code, sub_code)
        sections[name] = perturbation_section(run_dir, summary, sub_dir)
    summary["perturbations"] = sections
    _write_json(run_dir / "summary.json", summary)
    report = run_dir / "report.md"
    if report.is_file():
        text = report.read_text(encoding="utf-8")
        text += "".join(markdown_section(n, s) for n, s in sections.items())
        report.write_text(text, encoding="utf-8")
    return run_dir, summary, code


def terminal_lines(summary: Mapping[str, Any]) -> list[str]:
    """One line per perturbation for the terminal summary."""
    return [
        f"perturbation {name}: consistency {_pct(s['consistency'])} over {s['cases']} cases "
        f"({s['changed_count']} changed, {s['skipped']} skipped)"
        for name, s in summary.get("perturbations", {}).items()
    ]


def consistency_text(c: Mapping[str, Any], perturbation: str | None = None) -> list[str]:
    """compare's lines on consistency: the value, the least consistent rules and tags,
    and the changed cases with the checks that changed."""
    what = f" under perturbation {perturbation}" if perturbation else ""
    lines = [
        f"consistency{what}: {_pct(c['consistency'])}, {c['checks'] - c['checks_changed']} of "
        f"{c['checks']} (case, check) verdicts unchanged on {c['cases']} cases"
    ]
    rows = sorted(
        (e["value"], f"{kind} {label}", e)
        for kind in ("rule", "tag")
        for label, e in c["fragility"][kind].items()
        if e["value"] is not None and e["changed"]
    )
    if rows:
        lines.append(
            "  most fragile: "
            + ", ".join(f"{label} {v:.3f} ({e['changed']} changed)" for v, label, e in rows[:6])
        )
    for f in c["changed_cases"][:20]:
        lines.append(f"  changed {f['id']}: {', '.join(f['changed'])}")
    if c["changed_count"] > 20:
        lines.append(f"  ... and {c['changed_count'] - 20} more")
    return lines


def perturbation_counts(suite_name: str = "multi_speaker", seed: int = 0) -> list[str]:
    """A Markdown table: per perturbation, the cases kept and the skips by reason (the
    figures in docs/datasets.md: ``python -m hy_eval.harness._metamorphic``)."""
    from hy_eval.harness._perturb import PERTURBATIONS

    suite = load_suite(suite_name)
    lines = ["| perturbation | kept | skipped (reason: cases) |", "|---|---|---|"]
    for name in PERTURBATIONS:
        ps = perturb_suite(suite, list(suite.refs), name, seed)
        reasons = Counter(reason for _, reason in ps.skipped)
        why = "; ".join(f"{r}: {n}" for r, n in reasons.most_common()) or "-"
        lines.append(f"| {name} | {len(ps.refs)} | {len(ps.skipped)} ({why}) |")
    return lines


if __name__ == "__main__":
    echo("\n".join(perturbation_counts()))

"""The changed cases of a comparison as its page shows them: every shared case with at
least one check verdict changed (flipped ones included), each with what changed and
both runs' records side by side.

Checks are paired by kind and occurrence (``fact#0``, ``absent#1``) as consistency pairs
them (``analysis.changed_checks``), so the page lists exactly the cases ``compare``
counts as changed. What changed is named per check:

- a ``fact`` check: ``fact found`` / ``fact lost`` (the gold fact matched in one run
  only), else ``subject right`` / ``subject wrong`` and ``owner right`` / ``owner wrong``
  (both runs matched it; B's subject or owner is now right or wrong), else as ``other``;
- ``absent``, ``merge``, ``profile`` (profile_name, profile_absent) and ``other``
  (untouched, operations, parse, error): ``fixed`` when B's verdict is ok, ``broken``
  when it fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hy_eval.harness.analysis import changed_checks, records_unmeasured, verdicts_of
from hy_eval.harness.report._pages import case_entry
from hy_eval.harness.runlog import RECORDS_NAME, CaseRecord, Comparison, read_records

#: Changed cases embedded in the page; past this many (flipped ones first) the page says
#: how many were left out.
CHANGED_LIMIT = 3000

#: Check kind -> the group its change is named by (fact checks are named in detail).
GROUPS = {
    "absent": "absent",
    "merge": "merge",
    "profile_name": "profile",
    "profile_absent": "profile",
}


def _records(run_dir: Path) -> dict[str, list[CaseRecord]]:
    """Case id -> its records (one per repeat), in repeat order."""
    out: dict[str, list[CaseRecord]] = {}
    for rec in read_records(run_dir / RECORDS_NAME):
        out.setdefault(rec.id, []).append(rec)
    for recs in out.values():
        recs.sort(key=lambda r: r.repeat)
    return out


def _check_at(rec: CaseRecord, key: str) -> Any:
    """The check of ``rec`` keyed ``kind#occurrence``, or None."""
    kind, _, index = key.partition("#")
    same = [c for c in rec.score.checks if c.check == kind]
    return same[int(index)] if int(index) < len(same) else None


def change_kinds(a: CaseRecord, b: CaseRecord, keys: list[str]) -> list[str]:
    """What changed from ``a`` to ``b`` on the changed check ``keys``, each name once
    (see the module's docstring)."""
    out: list[str] = []
    for key in keys:
        kind = key.partition("#")[0]
        ca, cb = _check_at(a, key), _check_at(b, key)
        ma = ca.fact_match() if ca is not None else None
        mb = cb.fact_match() if cb is not None else None
        if kind == "fact" and ma is not None and mb is not None:
            found_a, found_b = ma.matched is not None, mb.matched is not None
            if found_a != found_b:
                out.append("fact found" if found_b else "fact lost")
                continue
            named = [
                f"{what} {'right' if y else 'wrong'}"
                for what, x, y in (
                    ("subject", ma.subject_ok, mb.subject_ok),
                    ("owner", ma.owner_ok, mb.owner_ok),
                )
                if x is not None and y is not None and x != y
            ]
            if named:
                out += named
                continue
        ok_b = cb.ok if cb is not None else kind in ("parse", "error")
        out.append(f"{GROUPS.get(kind, 'other')} {'fixed' if ok_b else 'broken'}")
    return list(dict.fromkeys(out))


def _slim_b(entry_a: dict[str, Any], entry_b: dict[str, Any]) -> dict[str, Any]:
    """B's entry without what it shares with A's: the conversation (when the same) and
    each stage's prompt that is the same (``same_user``), so the page holds it once."""
    if entry_b.get("input") == entry_a.get("input") and entry_b.get("rendered") == entry_a.get(
        "rendered"
    ):
        entry_b = {**entry_b, "input": None, "rendered": None, "same_input": True}
    stages = {}
    for name, stage in entry_b.get("stages", {}).items():
        other = entry_a.get("stages", {}).get(name) or {}
        if stage.get("user") is not None and stage.get("user") == other.get("user"):
            stage = {**stage, "user": None, "same_user": True}
        stages[name] = stage
    return {**entry_b, "stages": stages}


def changed_cases(
    result: Comparison, run_a: Path, run_b: Path, systems: dict[str, int]
) -> tuple[list[dict[str, Any]], int]:
    """The page's changed cases (flipped first, then by id) and how many there are in
    all. Of a case run with repeats, the first repeat whose verdicts changed is shown."""
    recs_a, recs_b = _records(run_a), _records(run_b)
    # Checks of a metric either run cannot measure are no change (compare's rule).
    leave = records_unmeasured(*recs_a.values(), *recs_b.values())
    flips = {f.id: f for f in result.flipped}
    rows = []
    for cid in sorted(set(recs_a) & set(recs_b)):
        pairs = {r.repeat: r for r in recs_b[cid]}
        shown = None
        for ra in recs_a[cid]:
            rb = pairs.get(ra.repeat)
            if rb is None:
                continue
            keys = changed_checks(verdicts_of(ra), verdicts_of(rb), leave)[1]
            if keys or (cid in flips and shown is None):
                shown = (ra, rb, keys)
                if keys:
                    break
        if shown is not None:
            rows.append((cid not in flips, cid, shown))
    rows.sort(key=lambda r: (r[0], r[1]))
    out = []
    for _, cid, (ra, rb, keys) in rows[:CHANGED_LIMIT]:
        flip = flips.get(cid)
        entry_a, entry_b = case_entry(ra, systems), case_entry(rb, systems)
        out.append(
            {
                "id": cid,
                "repeat": ra.repeat,
                "lang": ra.lang,
                "rules": ra.rules,
                "tags": ra.tags,
                "change": flip.change if flip else "",
                "keys": keys,
                "kinds": change_kinds(ra, rb, keys),
                "diff": flip.diff if flip else None,
                "a": entry_a,
                "b": _slim_b(entry_a, entry_b),
            }
        )
    return out, len(rows)

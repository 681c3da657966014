"""An external system's answer for one case (docs/systems.md, "Lines") turned into what
the scorer reads: the new facts, the operations the store shows, the profile, and the
metrics the system cannot expose.

The system's memory ids are strings; the scorer's are integers, so every id seen in
``before`` or ``after`` gets one, in the order first seen (``before`` first).
"""

from __future__ import annotations

from typing import Any

from hy_eval.harness.datasets import Case
from hy_eval.harness.scoring import Outcome, bound_texts
from hy_eval.harness.systems._base import SystemRun

#: Metrics no external system has: this package's reconcile fallback (R3), its parse
#: failures (an external system's failed parse is an error of its case, or invisible),
#: and facts echoed from this package's prompt examples (an external system writes its
#: memories with its own prompts, whose examples the harness does not know).
NEVER_MEASURED = frozenset({"fallback_rate", "parse_failure_rate", "echoed_subject_rate"})
#: What each ``measures`` word of the ready line makes measurable.
NEEDS = {
    "owner": frozenset({"owner_accuracy"}),
    "profile": frozenset({"profile_name_accuracy", "profile_leak_rate"}),
    "operations_raw": frozenset({"merge_violation_rate_raw"}),
}


def not_measured(measures: list[str] | tuple[str, ...]) -> frozenset[str]:
    """The metrics a system that exposes ``measures`` cannot be scored on."""
    missing = [metrics for word, metrics in NEEDS.items() if word not in measures]
    return NEVER_MEASURED.union(*missing)


def store_run(case: Case, answer: dict[str, Any], measures: list[str]) -> SystemRun:
    """The scorer's outcome and the record's fields for one ``ok`` answer."""
    ids: dict[str, int] = {}

    def num(sid: Any) -> int:
        return ids.setdefault(str(sid), len(ids) + 1)

    before = {num(m["id"]): m for m in answer.get("before") or []}
    after = {num(m["id"]): m for m in answer.get("after") or []}
    existing = {k: num(v) for k, v in (answer.get("existing_ids") or {}).items()}
    owners = "owner" in measures
    # A fact is a memory the add wrote: a new id, or an old one whose text changed.
    new = [i for i, m in after.items() if i not in before or m["text"] != before[i]["text"]]
    # What is scored is bounded, as the pipeline bounds its facts: a longer memory is
    # cut and counted in the record's ``truncated``.
    texts, cut = bound_texts([after[i]["text"] for i in new])
    owner_of = [after[i].get("owner") or "" for i in new]
    facts = [{"text": t, "owner": o} for t, o in zip(texts, owner_of, strict=True)]
    fact_of = {i: n for n, i in enumerate(new)}
    outcome = Outcome(
        facts=facts,
        existing_ids=existing,
        memories_after={
            i: {"id": i, "text": m["text"], "status": _status(m)} for i, m in after.items()
        },
        profile=dict(answer.get("profile") or {}),
        reconcile_ran=bool(before),
        not_measured=not_measured(measures),
    )
    outcome.applied_ops = _applied(before, after, fact_of, num)
    if "operations_raw" in measures:
        outcome.raw_ops = [_raw(op, num) for op in answer.get("operations_raw") or []]
    fields = {
        "status": "ok",
        "error": None,
        "facts": facts if owners else [{"text": f["text"]} for f in facts],
        "basic_info": answer.get("profile"),
        "operations": {"raw": outcome.raw_ops, "applied": outcome.applied_ops},
        "store_after": {
            "memories": [{**m, "n": i} for i, m in after.items()],
            "profile": answer.get("profile"),
        },
        "existing_ids": existing,
        "round_trips": answer.get("calls"),
        "truncated": {"scored_texts_cut": cut} if cut else {},
        "system_trace": answer.get("trace") or {},
    }
    return SystemRun(outcome, fields)


def _status(memory: dict[str, Any]) -> str:
    return "active" if memory.get("status", "active") == "active" else str(memory["status"])


def _applied(
    before: dict[int, dict[str, Any]],
    after: dict[int, dict[str, Any]],
    fact_of: dict[int, int],
    num: Any,
) -> list[dict[str, Any]]:
    """The operations the store shows: ADD for each new memory, UPDATE for a memory whose
    text changed, SUPERSEDE for one a new memory says it replaced, DELETE for one that is
    gone or no longer active with nothing naming its replacement (its fact unknown)."""
    ops: list[dict[str, Any]] = []
    replaced: dict[int, int] = {}
    for i, m in after.items():
        for old in m.get("supersedes") or []:
            replaced.setdefault(num(old), i)
    for i, n in fact_of.items():
        if i not in before:
            ops.append({"op": "ADD", "fact": n, "targets": []})
    for i, old in before.items():
        now = after.get(i)
        if i in replaced and replaced[i] in fact_of:
            ops.append({"op": "SUPERSEDE", "fact": fact_of[replaced[i]], "targets": [i]})
        elif now is not None and now["text"] != old["text"]:
            ops.append({"op": "UPDATE", "fact": fact_of[i], "targets": [i]})
        elif now is None or _status(now) != "active":
            ops.append({"op": "DELETE", "fact": None, "targets": [i]})
    return ops


def _raw(op: dict[str, Any], num: Any) -> dict[str, Any]:
    """A proposed operation in the scorer's form: its own text, its target numbered."""
    target = op.get("target")
    return {
        "op": str(op.get("op", "")).upper(),
        "fact": None,
        "fact_text": op.get("text") or "",
        "targets": [] if target is None else [num(target)],
    }

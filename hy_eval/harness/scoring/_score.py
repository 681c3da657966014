"""Scoring one case against its gold expectations (rule E3). docs/metrics.md defines each
metric; the names are part of the interface (reports, gates and summary.json use them).

Every metric is a ratio. A case contributes a numerator and a denominator to each
metric; a run's value is the sum of numerators over the sum of denominators, so a case
with nothing to check for a metric (denominator 0) does not move it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hy_eval.harness.datasets import (
    Case,
    contains_all,
    contains_any,
    fold_spaced,
    gold_subject,
    subject_right,
)
from hy_eval.harness.runlog import ScoreRecord
from hy_eval.harness.scoring._echo import echoed_people
from hy_eval.harness.scoring._matching import KeywordMatcher, Matcher
from hy_eval.harness.scoring._pairsubject import pair_subject_right
from hy_eval.memory import Speakers, Subject, same_subject, subject_of

#: Metrics where higher is better; the others are rates where lower is better.
ACCURACY_METRICS = (
    "case_pass",
    "fact_recall",
    "attribution_accuracy",
    "owner_accuracy",
    "profile_name_accuracy",
    "operation_accuracy",
)
VIOLATION_METRICS = (
    "misattribution_rate",
    "merge_violation_rate_raw",
    "merge_violation_rate_applied",
    "untouched_violation_rate",
    "profile_leak_rate",
    "noncanonical_subject_rate",
    "echoed_subject_rate",
    "parse_failure_rate",
    "fallback_rate",
    "error_rate",
)
METRICS = ACCURACY_METRICS + VIOLATION_METRICS
SUBJECT_KINDS = ("user", "named", "assistant", "other", "unknown", "missing")


@dataclass
class Outcome:
    """What the pipeline did for one case, in plain data (from ``AddResult`` and the store)."""

    facts: list[dict[str, str]] = field(default_factory=list)
    raw_ops: list[dict[str, Any]] = field(default_factory=list)
    applied_ops: list[dict[str, Any]] = field(default_factory=list)
    reconcile_ran: bool = False
    fallback: str | None = None
    parse_failed: bool = False
    #: Case memory id ("m1") -> database id.
    existing_ids: dict[str, int] = field(default_factory=dict)
    #: Database id -> {"text", "status"} after the add, for every memory of the user.
    memories_after: dict[int, dict[str, Any]] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    #: Metrics the system under test cannot expose (an external system without owners,
    #: profile or proposed operations): scored (0, 0) and listed as not measured.
    not_measured: frozenset[str] = frozenset()
    #: The people of the worked examples in the extraction prompt the run used, for the
    #: case's language (``hy_eval.memory.example_people``); empty for a prompt without
    #: examples. Read by ``echoed_subject_rate``.
    example_people: tuple[str, ...] = ()


@dataclass
class CaseScore:
    """A case's score as the scorer builds it; :meth:`record` is its form in the case
    record."""

    counts: dict[str, tuple[int, int]]
    passed: bool
    facts: list[dict[str, Any]]
    checks: list[dict[str, Any]]
    confusion: list[tuple[str, str]]
    not_measured: list[str] = field(default_factory=list)

    def record(self) -> ScoreRecord:
        """The score as the case record holds it (``CaseRecord.score``)."""
        return ScoreRecord.model_validate(
            {
                "counts": self.counts,
                "passed": self.passed,
                "facts": self.facts,
                "checks": self.checks,
                "confusion": self.confusion,
                **({"not_measured": self.not_measured} if self.not_measured else {}),
            }
        )


def _match(
    case: Case, facts: list[dict[str, str]], subjects: list[Subject], matcher: Matcher
) -> list[dict[str, Any]]:
    """Matching of gold facts to predicted facts by ``matcher`` (``keyword``: one-to-one,
    predicted facts containing all the gold fact's keywords; ``strict``: one-to-one, then
    a prediction may state several gold facts and a gold fact two predictions;
    ``_matching.py``). Every
    matcher prefers, for a gold fact, a prediction with the right subject and owner, then
    one with the right subject, then any."""
    golds = case.expect.facts

    def rank(g: int, i: int) -> int:
        right = pair_subject_right(golds[g], subjects[i], facts[i]["text"])
        return 0 if right and facts[i]["owner"] == golds[g].owner else 1 if right else 2

    picks = matcher.assign(golds, [f["text"] for f in facts], rank)
    rows = []
    for gold, pick in zip(golds, picks, strict=True):
        best = pick.predicted
        row: dict[str, Any] = {
            "gold_subject": gold.subject,
            "gold_owner": gold.owner,
            "keywords": gold.keywords,
            "matched": best,
        }
        if best is not None:
            used = [best, *pick.also]
            row.update(
                text=facts[best]["text"],
                predicted_subject=subjects[best].key,
                # Each (gold, prediction) pair on its own: a fact stated across two
                # predictions has the right subject and owner only when both have.
                subject_ok=all(
                    pair_subject_right(gold, subjects[i], facts[i]["text"]) for i in used
                ),
                owner=facts[best]["owner"],
                owner_ok=all(facts[i]["owner"] == gold.owner for i in used),
            )
            if pick.also:
                row["also"] = list(pick.also)
        if pick.detail:  # what the matcher adds (nothing for ``keyword``)
            row["match"] = pick.detail
        rows.append(row)
    return rows


def _cross_subject(
    ops: list[dict[str, Any]],
    facts: list[dict[str, str]],
    texts: dict[int, str],
    speakers: Speakers,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The changing operations whose fact and target have two known, different subjects
    (violations), and those where a side's subject cannot be told (undecided, not counted
    as violations: see docs/metrics.md)."""
    bad: list[dict[str, Any]] = []
    undecided: list[dict[str, Any]] = []
    for op in ops:
        if op["op"] not in ("UPDATE", "DELETE", "SUPERSEDE"):
            continue
        fact_subject = subject_of(_fact_text(op, facts), speakers)
        targets = [subject_of(texts[t], speakers) for t in op["targets"] if t in texts]
        if any(
            fact_subject.identity and t.identity and not same_subject(fact_subject, t)
            for t in targets
        ):
            bad.append(op)
        elif fact_subject.identity is None or any(t.identity is None for t in targets):
            undecided.append(op)
    return bad, undecided


def _fact_text(op: dict[str, Any], facts: list[dict[str, str]]) -> str:
    """The text of the fact an operation carries: the fact it points at, or (an external
    system's operation read from its store) ``fact_text``; empty when neither is known,
    which leaves the operation undecided."""
    if op.get("fact") is not None:
        return str(facts[op["fact"]]["text"])
    return str(op.get("fact_text") or "")


#: What one part of the scoring adds: counts per metric and check rows.
_Part = tuple[dict[str, tuple[int, int]], list[dict[str, Any]]]


def _score_facts(
    case: Case,
    facts: list[dict[str, str]],
    subjects: list[Subject],
    matcher: Matcher,
    owners: bool = True,
) -> tuple[dict[str, tuple[int, int]], list[dict[str, Any]], list[tuple[str, str]]]:
    """Recall, attribution and owner of the gold facts; with ``owners`` False (a system
    that records no owner) a fact's check does not look at the owner."""
    rows = _match(case, facts, subjects, matcher)
    matched = [r for r in rows if r["matched"] is not None]
    if not owners:
        for r in matched:
            r["owner_ok"] = None  # not measured: neither right nor wrong
    counts = {
        "fact_recall": (len(matched), len(rows)),
        "attribution_accuracy": (sum(r["subject_ok"] for r in matched), len(matched)),
        "owner_accuracy": (sum(r["owner_ok"] is True for r in matched), len(matched)),
    }
    checks = [
        {
            "check": "fact",
            "ok": r["matched"] is not None and r["subject_ok"] and r["owner_ok"] is not False,
            "detail": r,
        }
        for r in rows
    ]
    confusion = [
        (
            str(gold_subject(r["gold_subject"]).kind),
            "missing" if r["matched"] is None else r["predicted_subject"].split(":")[0],
        )
        for r in rows
    ]
    user_facts = [s for s in subjects if s.kind == "user"]
    counts["noncanonical_subject_rate"] = (sum(s.by_name for s in user_facts), len(user_facts))
    return counts, checks, confusion


def _score_absent(case: Case, facts: list[dict[str, str]], subjects: list[Subject]) -> _Part:
    checks = []
    for check in case.expect.absent:
        hits = [
            f["text"]
            for f, s in zip(facts, subjects, strict=True)
            if subject_right(check.subject, s)
            and contains_all(f["text"], check.keywords)
            and not contains_any(f["text"], check.without)
        ]
        detail: dict[str, Any] = {"subject": check.subject, "keywords": check.keywords}
        if check.without:
            detail["without"] = check.without
        checks.append({"check": "absent", "ok": not hits, "detail": {**detail, "found": hits}})
    violated = sum(not ch["ok"] for ch in checks)
    return {"misattribution_rate": (violated, len(checks))}, checks


def _score_reconcile(case: Case, outcome: Outcome, texts_before: dict[int, str]) -> _Part:
    if not outcome.reconcile_ran:
        return {}, []
    facts, speakers = outcome.facts, case.speakers
    raw_bad, raw_undecided = _cross_subject(outcome.raw_ops, facts, texts_before, speakers)
    applied_bad, _ = _cross_subject(outcome.applied_ops, facts, texts_before, speakers)
    counts = {
        "merge_violation_rate_raw": (len(raw_bad), len(outcome.raw_ops)),
        "merge_violation_rate_applied": (len(applied_bad), len(outcome.applied_ops)),
        "fallback_rate": (1 if outcome.fallback else 0, 1),
    }
    detail = {
        "raw": raw_bad,
        "applied": applied_bad,
        "raw_undecided": raw_undecided,
        "fallback": outcome.fallback,
    }
    return counts, [{"check": "merge", "ok": not applied_bad, "detail": detail}]


def _score_untouched(case: Case, outcome: Outcome, texts_before: dict[int, str]) -> _Part:
    bad = []
    for mid in case.expect.untouched:
        db_id = outcome.existing_ids.get(mid)
        after = outcome.memories_after.get(db_id) if db_id is not None else None
        before = texts_before.get(db_id) if db_id is not None else None
        if after is None or after["text"] != before or after["status"] != "active":
            bad.append(mid)
    checks = [{"check": "untouched", "ok": not bad, "detail": bad}] if case.expect.untouched else []
    return {"untouched_violation_rate": (len(bad), len(case.expect.untouched))}, checks


def operations_on(ops: list[dict[str, Any]], db_id: int | None) -> set[str]:
    """The kinds of changing operation among ``ops`` that target ``db_id``."""
    return {
        op["op"]
        for op in ops
        if op["op"] in ("UPDATE", "DELETE", "SUPERSEDE") and db_id in op["targets"]
    }


def _score_operations(case: Case, outcome: Outcome) -> _Part:
    """Each ``expect.operations`` entry against the operations applied after the guard:
    UPDATE/DELETE/SUPERSEDE is met when an operation of that kind targets the memory
    (any one of a list), NONE when no changing operation does."""
    rows: list[dict[str, Any]] = []
    met = 0
    for mid in case.expect.operations:
        wanted = case.expect.expected_ops(mid)
        got = operations_on(outcome.applied_ops, outcome.existing_ids.get(mid))
        ok = not got if wanted == ("NONE",) else bool(got & set(wanted))
        met += ok
        rows.append({"memory": mid, "expected": list(wanted), "applied": sorted(got), "ok": ok})
    if not rows:
        return {}, []
    return {"operation_accuracy": (met, len(rows))}, [
        {"check": "operations", "ok": met == len(rows), "detail": rows}
    ]


def _score_profile(case: Case, outcome: Outcome) -> _Part:
    profile = case.expect.profile
    if profile is None or "profile_name_accuracy" in outcome.not_measured:
        return {}, []  # nothing to check, or a system that keeps no profile
    counts: dict[str, tuple[int, int]] = {}
    checks: list[dict[str, Any]] = []
    if profile.name is not None:
        ok = outcome.profile.get("name") == profile.name
        counts["profile_name_accuracy"] = (int(ok), 1)
        checks.append({"check": "profile_name", "ok": ok, "detail": outcome.profile.get("name")})
    values = fold_spaced(" ".join(str(v) for v in outcome.profile.values()))
    leaks = [a for a in profile.absent if fold_spaced(a) in values]
    counts["profile_leak_rate"] = (len(leaks), len(profile.absent))
    if profile.absent:
        checks.append({"check": "profile_absent", "ok": not leaks, "detail": leaks})
    return counts, checks


def score_case(case: Case, outcome: Outcome, matcher: Matcher | None = None) -> CaseScore:
    """Every metric's (numerator, denominator) and every check of one case. ``matcher``
    pairs gold with predicted facts (default ``keyword``); the ``absent`` checks and the
    subject and owner checks do not depend on it."""
    c: dict[str, tuple[int, int]] = {m: (0, 0) for m in METRICS}
    c["error_rate"] = (1 if outcome.error else 0, 1)
    if outcome.error:
        c["case_pass"] = (0, 1)
        check = {"check": "error", "ok": False, "detail": outcome.error}
        return CaseScore(c, False, [], [check], [], sorted(outcome.not_measured))
    facts = outcome.facts
    subjects = [subject_of(f["text"], case.speakers) for f in facts]
    counts, checks, confusion = _score_facts(
        case,
        facts,
        subjects,
        matcher if matcher is not None else KeywordMatcher(),
        owners="owner_accuracy" not in outcome.not_measured,
    )
    c.update(counts)
    # An external system's prompt examples are unknown: nobody is read as echoed (and
    # the metric is set (0, 0) below with the others it cannot expose).
    people = () if "echoed_subject_rate" in outcome.not_measured else outcome.example_people
    echoed = echoed_people(case, [f["text"] for f in facts], subjects, people)
    c["echoed_subject_rate"] = (sum(e is not None for e in echoed), len(facts))
    texts_before = {
        outcome.existing_ids[m.id]: m.text for m in case.existing if m.id in outcome.existing_ids
    }
    for part_counts, part_checks in (
        _score_absent(case, facts, subjects),
        _score_reconcile(case, outcome, texts_before),
        _score_untouched(case, outcome, texts_before),
        _score_operations(case, outcome),
        _score_profile(case, outcome),
    ):
        c.update(part_counts)
        checks += part_checks
    c["parse_failure_rate"] = (int(outcome.parse_failed), 1)
    if outcome.parse_failed:
        checks.append({"check": "parse", "ok": False, "detail": "a model answer could not be used"})
    passed = all(ch["ok"] for ch in checks)
    c["case_pass"] = (int(passed), 1)
    for metric in outcome.not_measured:
        c[metric] = (0, 0)
    fact_rows = [
        {
            "text": f["text"],
            "owner": f["owner"],
            "subject": s.key,
            "by_name": s.by_name,
            **({"echoed": e} if e is not None else {}),
        }
        for f, s, e in zip(facts, subjects, echoed, strict=True)
    ]
    return CaseScore(c, passed, fact_rows, checks, confusion, sorted(outcome.not_measured))

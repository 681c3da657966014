"""``hy-eval datasets stats SUITE``: what a suite can measure (docs/datasets.md,
"Suite statistics").

Counts per language, per rule a case actually CHECKS (``checked_rules``: derived from its
checks and content, not from its ``rules`` tags), per tag and per metric denominator;
near-duplicate conversations; the conversation-length distribution; and the minimum
detectable effect (MDE) of each headline metric for a paired comparison of two variants
on this suite's cases.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hy_eval.harness.analysis._stats import Z_80, Z_975, minimum_detectable_effect
from hy_eval.harness.datasets import Case, Retrieval, Suite, canonical, members, retrieval
from hy_eval.harness.runlog import SUMMARY_NAME, Baseline, RunSummary
from hy_eval.memory._names import core_name

#: Character n-grams of the near-duplicate test and the Jaccard similarity from which two
#: conversations are near duplicates (single linkage: a chain of near pairs is a cluster).
NGRAM = 3
DUPLICATE_JACCARD = 0.5
#: The metrics the MDE table covers.
POWER_METRICS = (
    "case_pass",
    "fact_recall",
    "attribution_accuracy",
    "owner_accuracy",
    "misattribution_rate",
    "merge_violation_rate_raw",
    "untouched_violation_rate",
    "operation_accuracy",
)
BASELINES_DIR = Path(__file__).resolve().parents[3] / "reports" / "baselines"
_SPEAKER_KINDS = ("user", "named", "assistant")


def _ident(subject: str) -> str:
    """A gold subject as an identity comparable with ``Subject.identity``."""
    return subject if subject in ("user", "assistant") else f"person:{core_name(subject)}"


def _reconcile_rules(case: Case, found: Retrieval) -> set[str]:
    """R3 when some existing memory is shown to reconcile for a gold fact; R1 and R2 when
    one is shown for a gold fact of another speaker's subject (a merge can be seen)."""
    out: set[str] = set()
    for mid, golds in found.found_by.items():
        if not golds:
            continue
        out.add("R3")
        subject = found.subjects[mid]
        if subject.kind in _SPEAKER_KINDS and any(
            _ident(case.expect.facts[g].subject) != subject.identity for g in golds
        ):
            out |= {"R1", "R2"}
    return out


def checked_rules(case: Case, found: Retrieval | None = None) -> set[str]:
    """The rules a check of ``case`` can fail for (docs/datasets.md lists the derivation).
    D*, H* and E* rules are never checked by a memory case."""
    e = case.expect
    subjects = {f.subject for f in e.facts} | {a.subject for a in e.absent}
    named = subjects & set(case.named_speakers)
    out: set[str] = {"A5"} if subjects else set()
    if "user" in subjects:
        out |= {"M1", "A1"}
    if named:
        out |= {"M2", "A2", "A4"}
    if "assistant" in subjects:
        out |= {"M3", "A3"}
    if subjects and any(m.role == "tool" for m in case.normalised):
        out.add("M4")
    if subjects and any(
        isinstance(m, dict) and isinstance(m.get("content"), list) for m in case.messages
    ):
        out.add("M5")
    if "user" in subjects and named and case.speakers.user_name:
        out.add("M6")
    if _circle_check(case):
        out.add("A6")
    if _two_subjects_one_fact(case):
        out.add("A7")
    if any(
        len(case.speakers.forms_of(n)) > 1 or (case.lang == "zh" and n.isascii()) for n in named
    ):
        out.add("A8")
    if e.profile is not None:
        out.add("P1")
        if e.profile.name:
            out.add("P2")
        forms = {f.casefold() for n in case.named_speakers for f in case.speakers.forms_of(n)}
        if case.named_speakers and any(a.casefold() not in forms for a in e.profile.absent):
            out |= {"P3", "P4"}
    if case.existing and e.facts:
        out |= _reconcile_rules(case, found or retrieval(case))
    return out


# Words that name a speaker's role rather than a person of their circle.
_ROLE_WORDS = frozenset({"user", "the user", "用户", "assistant", "the assistant", "助手", "ai"})


def _circle_check(case: Case) -> bool:
    """An absent check with a ``without`` item that names none of the speakers: "a fact
    about the user that mentions Oslo but not Theo" (A6). A ``without`` that only exempts
    facts naming a speaker ("... unless it names John") tests attribution, not A6."""
    people = [*case.named_speakers, *filter(None, [case.speakers.user_name])]
    speakers = {f.casefold() for n in people for f in case.speakers.forms_of(n)}

    def names_a_speaker(word: str) -> bool:
        return word in _ROLE_WORDS or any(s in word for s in speakers)

    return any(
        not any(names_a_speaker(w.casefold()) for w in members([item]))
        for check in case.expect.absent
        for item in check.without
    )


def _two_subjects_one_fact(case: Case) -> bool:
    """Two gold facts with different subjects that share a keyword item (A7)."""
    seen: dict[str, str] = {}
    for f in case.expect.facts:
        for item in f.keywords:
            key = json.dumps(item, ensure_ascii=False)
            if seen.setdefault(key, f.subject) != f.subject:
                return True
    return False


def denominators(case: Case, found: Retrieval | None) -> dict[str, int]:
    """Each metric's denominator for ``case`` as far as the dataset fixes it. Assumed:
    every gold fact is matched (attribution, owner, noncanonical) and, where reconcile is
    reachable (``R3``), one operation per gold fact (merge rates)."""
    e = case.expect
    reachable = bool(found and any(found.found_by.values()) and e.facts)
    return {
        "case_pass": 1,
        "fact_recall": len(e.facts),
        "attribution_accuracy": len(e.facts),
        "owner_accuracy": len(e.facts),
        "noncanonical_subject_rate": sum(f.subject == "user" for f in e.facts),
        "misattribution_rate": len(e.absent),
        "merge_violation_rate_raw": len(e.facts) if reachable else 0,
        "merge_violation_rate_applied": len(e.facts) if reachable else 0,
        "fallback_rate": int(reachable),
        "untouched_violation_rate": len(e.untouched),
        "operation_accuracy": len(e.operations),
        "profile_name_accuracy": int(bool(e.profile and e.profile.name)),
        "profile_leak_rate": len(e.profile.absent) if e.profile else 0,
        "parse_failure_rate": 1,
        "error_rate": 1,
    }


def conversation_text(case: Any) -> str:
    """The words of a case's conversation, speaker names masked (a renamed copy is a
    duplicate), in canonical form, for the duplicate test."""
    if not isinstance(case, Case):
        return canonical(str(getattr(case, "text", "")))
    text = "\n".join(m.content for m in case.normalised)
    people = [*case.named_speakers, *([case.speakers.user_name] if case.speakers.user_name else [])]
    forms = sorted({f for p in people for f in case.speakers.forms_of(p)}, key=len, reverse=True)
    for form in forms:
        text = text.replace(form, "@")
    return canonical(text)


def _grams(text: str) -> frozenset[str]:
    return frozenset(text[i : i + NGRAM] for i in range(max(1, len(text) - NGRAM + 1)))


def near_duplicates(ids: list[str], texts: list[str]) -> list[list[str]]:
    """Clusters (two or more ids) of conversations whose character n-gram Jaccard
    similarity is at least ``DUPLICATE_JACCARD``, joined by single linkage."""
    grams = [_grams(t) for t in texts]
    parent = list(range(len(ids)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(ids)):
        for j in range(i + 1, len(ids)):
            a, b = grams[i], grams[j]
            union = len(a | b)
            if union and len(a & b) / union >= DUPLICATE_JACCARD:
                parent[root(j)] = root(i)
    clusters: dict[int, list[str]] = {}
    for i, case_id in enumerate(ids):
        clusters.setdefault(root(i), []).append(case_id)
    return sorted((c for c in clusters.values() if len(c) > 1), key=lambda c: (-len(c), c[0]))


def distribution(values: list[int]) -> dict[str, float]:
    """min, quartiles, max and mean."""
    if not values:
        return {}
    q1, q2, q3 = (
        statistics.quantiles(values, n=4, method="inclusive")
        if len(values) > 1
        else [values[0]] * 3
    )
    return {
        "min": min(values),
        "p25": q1,
        "median": q2,
        "p75": q3,
        "max": max(values),
        "mean": round(statistics.fmean(values), 1),
    }


def baseline_rates(suite_name: str) -> dict[str, float]:
    """The suite's blessed baseline values (``reports/baselines/<suite>.json``), if any."""
    try:
        return run_rates(BASELINES_DIR / f"{suite_name}.json")
    except ValueError:
        return {}


def power_table(
    units: dict[str, int],
    cases: dict[str, int],
    rates: dict[str, float],
    discordance: float | None = None,
) -> list[dict[str, Any]]:
    """Per metric of ``POWER_METRICS``: n (units), the assumed rate p and discordance, the
    MDE with n units and the MDE were each case a single unit (``mde_cases``, the bound
    when a case's units move together). ``n_all`` and ``mde_all``: the same with every
    gold fact matched (what the suite can measure, whatever the assumed model's recall);
    they differ from n and mde for attribution and owner only."""
    rows = []
    for metric in POWER_METRICS:
        n, k = units.get(metric, 0), cases.get(metric, 0)
        n_all = n
        p = rates.get(metric, 0.5)
        if metric in ("attribution_accuracy", "owner_accuracy") and "fact_recall" in rates:
            # Only matched facts count: the baseline's recall of them.
            n, k = round(n * rates["fact_recall"]), round(k * rates["fact_recall"])
        d = discordance if discordance is not None else 2 * p * (1 - p)

        def mde(size: int, d: float = d, p: float = p) -> float | None:
            if size == 0:
                return None
            if discordance is None:  # compare's own assumption when nothing was observed
                return minimum_detectable_effect(size, p, p, 0)
            return float((Z_975 + Z_80) * math.sqrt(d / size))

        rows.append(
            {
                "metric": metric,
                "n": n,
                "cases": k,
                "p": p,
                "discordance": d,
                "mde": mde(n),
                "mde_cases": mde(k),
                "n_all": n_all,
                "mde_all": mde(n_all),
            }
        )
    return rows


@dataclass
class SuiteStats:
    suite: str
    cases: int
    langs: Counter[str] = field(default_factory=Counter)
    tagged_rules: Counter[str] = field(default_factory=Counter)
    checked_rules: Counter[str] = field(default_factory=Counter)
    tags: Counter[str] = field(default_factory=Counter)
    denominators: dict[str, int] = field(default_factory=dict)
    denominator_cases: dict[str, int] = field(default_factory=dict)
    merge_cases: int = 0
    user_names: Counter[str] = field(default_factory=Counter)
    messages: list[int] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)
    duplicates: list[list[str]] = field(default_factory=list)
    power: list[dict[str, Any]] = field(default_factory=list)
    rate_source: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["messages"] = distribution(self.messages)
        out["chars"] = distribution(self.chars)
        out["six_or_more_messages"] = sum(m >= 6 for m in self.messages)
        return out


def run_rates(path: Path) -> dict[str, float]:
    """The metric values of a run (its folder or its ``summary.json``) or of a baseline
    file, as the rates the MDE assumes. ``ValueError`` when there are none."""
    file = path / SUMMARY_NAME if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--rates {path}: cannot read ({type(exc).__name__})") from None
    out = {name: float(v) for name, v in _metric_values(data).items() if v is not None}
    if not out:
        raise ValueError(f"--rates {path}: no metric values (a run folder, summary or baseline)")
    return out


def _metric_values(data: Any) -> dict[str, float | None]:
    """Metric -> value of a summary's data (values with their CIs) or a baseline's."""
    try:
        return {m: e.value for m, e in RunSummary.model_validate(data).metrics.items()}
    except ValidationError:
        pass
    try:
        return dict(Baseline.model_validate(data).metrics)
    except ValidationError:
        return {}


def suite_stats(
    suite: Suite,
    discordance: float | None = None,
    rates_from: Path | None = None,
) -> SuiteStats:
    """Every figure of ``datasets stats`` for ``suite`` (cases parsed one at a time).
    The MDE assumes the rates of ``rates_from`` (a run or baseline) or of the suite's
    baseline. Raises ``ValueError`` for a ``discordance`` outside (0, 1] or unreadable
    rates."""
    if discordance is not None and not 0 < discordance <= 1:
        raise ValueError(f"--discordance {discordance:g}: give a share in (0, 1]")
    st = SuiteStats(suite.name, len(suite.refs))
    ids: list[str] = []
    texts: list[str] = []
    for case in suite.iter_cases():
        st.langs[case.lang] += 1
        st.tags.update(case.tags)
        st.tagged_rules.update(case.rules)
        ids.append(case.id)
        texts.append(conversation_text(case))
        if not isinstance(case, Case):  # history: the expected parse checks every rule
            st.checked_rules.update(case.rules)
            st.messages.append(len(case.expect.messages))
            st.chars.append(len(case.text))
            continue
        found = retrieval(case) if case.existing and case.expect.facts else None
        st.checked_rules.update(checked_rules(case, found))
        for metric, n in denominators(case, found).items():
            st.denominators[metric] = st.denominators.get(metric, 0) + n
            st.denominator_cases[metric] = st.denominator_cases.get(metric, 0) + (n > 0)
        st.merge_cases += bool(
            found
            and case.expect.measures_merge
            and any(found.measures_merge(case, m) for m in case.expect.untouched)
        )
        st.user_names[case.speakers.user_name or "(none)"] += 1
        st.messages.append(len(case.normalised))
        st.chars.append(sum(len(m.content) for m in case.normalised))
    st.duplicates = near_duplicates(ids, texts)
    if suite.kind == "memory":
        if rates_from is not None:
            rates, st.rate_source = run_rates(rates_from), str(rates_from)
        else:
            rates = baseline_rates(suite.name)
            st.rate_source = f"reports/baselines/{suite.name}.json" if rates else "none (p = 0.5)"
        st.power = power_table(st.denominators, st.denominator_cases, rates, discordance)
    return st


def _counts(title: str, counter: Counter[str], total: int) -> list[str]:
    lines = [f"{title}:"]
    for key, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {key:<28}{n:>6}  {n / total:6.1%}" if total else f"  {key} {n}")
    return lines


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def format_stats(st: SuiteStats) -> str:
    """The text ``datasets stats`` prints."""
    out = [f"{st.suite}: {st.cases} cases"]
    out += _counts("languages", st.langs, st.cases)
    rules = sorted(set(st.tagged_rules) | set(st.checked_rules))
    out.append("rules (tagged / checked: a check of the case can fail for the rule):")
    out += [f"  {r:<6}{st.tagged_rules[r]:>6}{st.checked_rules[r]:>6}" for r in rules]
    out += _counts("tags", st.tags, st.cases)
    if st.denominators:
        out.append("metric denominators (units / cases with any; assumptions in docs):")
        out += [f"  {m:<30}{n:>6}{st.denominator_cases[m]:>6}" for m, n in st.denominators.items()]
        out.append(f"cases that measure a cross-subject merge: {st.merge_cases}")
        top = st.user_names.most_common(5)
        out.append("user names (top 5): " + ", ".join(f"{n} {c}" for n, c in top))
    d = st.as_dict()
    six = d["six_or_more_messages"]
    share = six / max(1, st.cases)
    out.append(f"messages per case: {_dist(d['messages'])}; 6 or more: {six} ({share:.0%})")
    out.append(f"characters per case: {_dist(d['chars'])}")
    out.append(
        f"near-duplicate clusters (character {NGRAM}-gram Jaccard >= {DUPLICATE_JACCARD}): "
        f"{len(st.duplicates)} clusters, {sum(len(c) for c in st.duplicates)} cases"
    )
    out += [f"  {' '.join(c)}" for c in st.duplicates[:20]]
    if len(st.duplicates) > 20:
        out.append(f"  ... and {len(st.duplicates) - 20} more (--json lists all)")
    if st.power:
        out.append(
            "minimum detectable effect, points (paired A/B on these cases, alpha 0.05 "
            f"two-sided, power 0.8; p from {st.rate_source}):"
        )
        out.append(f"  {'metric':<28}{'n':>6}{'p':>7}{'disc.':>7}{'MDE':>7}{'cases':>7}{'MDE':>7}")
        out += [
            f"  {r['metric']:<28}{r['n']:>6}{r['p']:>7.3f}{r['discordance']:>7.3f}"
            f"{_pct(r['mde']):>7}{r['cases']:>7}{_pct(r['mde_cases']):>7}"
            for r in st.power
        ]
        out += [
            f"  {r['metric']} with every gold fact matched (the suite's capacity at this p): "
            f"n {r['n_all']}, MDE {_pct(r['mde_all'])}"
            for r in st.power
            if r["n_all"] != r["n"]
        ]
    return "\n".join(out)


def _dist(d: dict[str, float]) -> str:
    if not d:
        return "-"
    return " ".join(f"{k} {v:g}" for k, v in d.items())

"""``hy-eval matchers evaluate``: each matcher's precision and recall against pairs of
(predicted fact, gold fact) that people judged the same or not.

The file format is in docs/metrics.md ("Measuring the matchers"). Each matcher decides
on each pair alone, so this measures its acceptance rule; the one-to-one assignment
among a case's facts is not measured here. Precision is the share of the pairs a
matcher accepts that people judged the same; recall the share of the pairs people judged
the same that it accepts. Each comes with Wilson's 95% interval (``_stats``), over all
pairs, per ``kind`` and per language, and the same per source of the pairs (the
embedded model's runs, capable models' runs, written pairs).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hy_eval.harness.analysis._aggregate import fmt_ratio
from hy_eval.harness.analysis._pairdraw import PAIR_SOURCES
from hy_eval.harness.analysis._stats import wilson_interval
from hy_eval.harness.datasets import contains_all, keyword_problem
from hy_eval.harness.runlog import MetricEntry
from hy_eval.harness.scoring import decide, match_fuzzy

if TYPE_CHECKING:
    from hy_eval.harness.scoring import Judge


class PairFileError(ValueError):
    """A pairs file that cannot be read: every problem, one per line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""))
        self.problems = problems


@dataclass(frozen=True)
class JudgedPair:
    predicted: str
    gold: str
    lang: str
    same: bool
    kind: str
    #: The gold fact's keyword items (as in a suite); ``keyword`` cannot decide without.
    keywords: list[Any] | None = None
    #: Speakers' names, which ``fuzzy`` ignores (the subject is scored apart).
    names: list[str] = field(default_factory=list)
    #: ``dev`` (rules and thresholds may be tuned on it) or ``test`` (never), or None.
    split: str | None = None
    #: Where the pair comes from (``PAIR_SOURCES``: a run of the embedded model, of a
    #: capable model, or written), or None.
    source: str | None = None


def _pair_problem(row: Any) -> str | None:
    if not isinstance(row, dict):
        return "not a JSON object"
    for key in ("predicted", "gold", "kind"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            return f'"{key}" must be a non-empty string'
    if row.get("lang") not in ("en", "zh"):
        return '"lang" must be "en" or "zh"'
    if not isinstance(row.get("same"), bool):
        return '"same" must be true or false'
    keywords = row.get("keywords")
    if keywords is not None:
        if not isinstance(keywords, list) or not keywords:
            return '"keywords" must be a non-empty list'
        for item in keywords:
            problem = keyword_problem(item)
            if problem:
                return f'"keywords": {problem}'
    names = row.get("names", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return '"names" must be a list of strings'
    if row.get("split") not in (None, "dev", "test"):
        return '"split" must be "dev" or "test"'
    if row.get("source") not in (None, *PAIR_SOURCES):
        return f'"source" must be one of {", ".join(PAIR_SOURCES)}'
    return None


def read_pairs(path: str | Path) -> list[JudgedPair]:
    """The judged pairs of a JSONL file; ``PairFileError`` names every bad line."""
    pairs: list[JudgedPair] = []
    problems: list[str] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PairFileError([f"{path}: cannot read ({exc})"]) from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            problems.append(f"{path}:{number}: not JSON ({exc})")
            continue
        problem = _pair_problem(row)
        if problem:
            problems.append(f"{path}:{number}: {problem}")
            continue
        pairs.append(
            JudgedPair(
                row["predicted"],
                row["gold"],
                row["lang"],
                row["same"],
                row["kind"].strip(),
                row.get("keywords"),
                list(row.get("names", [])),
                row.get("split"),
                row.get("source"),
            )
        )
    if problems:
        raise PairFileError(problems)
    if not pairs:
        raise PairFileError([f"{path}: no pairs"])
    return pairs


def keyword_decides(pair: JudgedPair) -> bool | None:
    """``keyword``: the prediction holds every keyword item (``None``: no keywords)."""
    return None if pair.keywords is None else contains_all(pair.predicted, pair.keywords)


def strict_decides(pair: JudgedPair) -> bool:
    """``strict`` on the pair alone: keywords as words, content agreement, cues."""
    return decide(pair.gold, pair.keywords or [], pair.predicted, pair.names).accepted


def fuzzy_decides(pair: JudgedPair) -> bool:
    """``fuzzy`` on the pair alone (a keyword hit accepts, as in scoring)."""
    hits = None if pair.keywords is None else [[bool(keyword_decides(pair))]]
    found = match_fuzzy([pair.predicted], [pair.gold], ignore=pair.names, keyword_hits=hits)
    return found[0].predicted is not None


def judge_decisions(judge: Judge, pairs: Sequence[JudgedPair]) -> list[bool]:
    """The judge's verdict on every pair (an unusable answer counts as "not the same")."""

    async def ask() -> list[bool]:
        try:
            verdicts = await asyncio.gather(
                *(
                    judge.same(p.predicted, p.gold, p.lang, f"pair {i + 1}")
                    for i, p in enumerate(pairs)
                )
            )
        finally:
            await judge.llm.aclose()
        return [v.same for v in verdicts]

    return asyncio.run(ask())


def _rate(num: int, den: int) -> dict[str, Any]:
    if den == 0:
        return {"value": None, "ci": None, "num": 0, "den": 0}
    value = num / den
    lo, hi = wilson_interval(value, den)
    return {"value": value, "ci": [lo, hi], "num": num, "den": den}


def scores(pairs: Sequence[JudgedPair], decisions: Sequence[bool | None]) -> dict[str, Any]:
    """Precision and recall (with Wilson CIs) of one matcher's decisions; pairs it could
    not decide (``None``) are counted apart as ``undecided``."""
    tp = fp = fn = tn = undecided = 0
    for pair, accepted in zip(pairs, decisions, strict=True):
        if accepted is None:
            undecided += 1
        elif accepted and pair.same:
            tp += 1
        elif accepted:
            fp += 1
        elif pair.same:
            fn += 1
        else:
            tn += 1
    return {
        "pairs": len(pairs),
        "undecided": undecided,
        "precision": _rate(tp, tp + fp),
        "recall": _rate(tp, tp + fn),
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
    }


def _groups(
    pairs: Sequence[JudgedPair], key: Callable[[JudgedPair], str]
) -> list[tuple[str, list[int]]]:
    """The indices of ``pairs`` by ``key``, in the key's order."""
    groups: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        groups.setdefault(key(pair), []).append(i)
    return sorted(groups.items())


def _breakdown(pairs: Sequence[JudgedPair], decided: Sequence[bool | None]) -> dict[str, Any]:
    """Scores over ``pairs``, per ``kind``, per ``lang`` and per language and kind."""

    def of(idx: list[int]) -> dict[str, Any]:
        return scores([pairs[i] for i in idx], [decided[i] for i in idx])

    entry: dict[str, Any] = {"all": scores(pairs, decided)}
    entry["kind"] = {k: of(idx) for k, idx in _groups(pairs, lambda p: p.kind)}
    entry["lang"] = {k: of(idx) for k, idx in _groups(pairs, lambda p: p.lang)}
    entry["lang_kind"] = {}
    for lang, idx in _groups(pairs, lambda p: p.lang):
        in_lang = [pairs[i] for i in idx]
        entry["lang_kind"][lang] = {
            kind: of([idx[j] for j in sub]) for kind, sub in _groups(in_lang, lambda p: p.kind)
        }
    return entry


def evaluate(
    pairs: Sequence[JudgedPair], decisions: Mapping[str, Sequence[bool | None]]
) -> dict[str, Any]:
    """Each matcher's scores over all pairs (pooled), per ``kind``, per ``lang`` and per
    language and kind, and the same again per ``source`` (``source``: source -> that
    breakdown, over the pairs that name their source)."""
    out: dict[str, Any] = {"pairs": len(pairs), "matchers": {}}
    named = [i for i, p in enumerate(pairs) if p.source]
    by_source = [
        (source, [named[j] for j in sub])
        for source, sub in _groups([pairs[i] for i in named], lambda p: p.source or "")
    ]
    for name, decided in decisions.items():
        entry = _breakdown(pairs, decided)
        entry["source"] = {
            source: _breakdown([pairs[i] for i in idx], [decided[i] for i in idx])
            for source, idx in by_source
        }
        out["matchers"][name] = entry
    return out


def decide_all(
    pairs: Sequence[JudgedPair], names: Iterable[str], judge: Callable[[], Judge] | None = None
) -> dict[str, list[bool | None]]:
    """Each named matcher's decisions; ``judge`` makes the judge when it is asked for."""
    out: dict[str, list[bool | None]] = {}
    for name in names:
        if name == "strict":
            out[name] = [strict_decides(p) for p in pairs]
        elif name == "keyword":
            out[name] = [keyword_decides(p) for p in pairs]
        elif name == "fuzzy":
            out[name] = [fuzzy_decides(p) for p in pairs]
        elif name == "judge" and judge is not None:
            out[name] = list(judge_decisions(judge(), pairs))
        else:
            raise ValueError(f"unknown matcher {name!r}")
    return out


def _cell(rate: dict[str, Any]) -> str:
    if rate["value"] is None:
        return "n/a"
    return f"{fmt_ratio(MetricEntry.model_validate(rate))} {rate['num']}/{rate['den']}"


def evaluation_text(result: dict[str, Any]) -> str:
    """The table ``matchers evaluate`` prints: each matcher pooled (all, per kind, per
    language), then per source (all, per language, per language and kind)."""
    lines = [
        f"{result['pairs']} judged pairs; precision and recall with Wilson 95% intervals",
        f"{'matcher':<8} {'slice':<46} {'pairs':>5}  {'precision':<30} {'recall':<30}",
    ]
    for name, entry in result["matchers"].items():
        rows = [("all", entry["all"])]
        rows += [(f"kind={k}", s) for k, s in entry["kind"].items()]
        rows += [(f"lang={k}", s) for k, s in entry["lang"].items()]
        for source, part in entry.get("source", {}).items():
            rows.append((f"source={source}", part["all"]))
            for lang, s in part["lang"].items():
                rows.append((f"source={source} lang={lang}", s))
                rows += [
                    (f"source={source} lang={lang} kind={k}", ks)
                    for k, ks in part["lang_kind"][lang].items()
                ]
        for label, s in rows:
            undecided = f"  ({s['undecided']} undecided: no keywords)" if s["undecided"] else ""
            lines.append(
                f"{name:<8} {label:<46} {s['pairs']:>5}  {_cell(s['precision']):<30} "
                f"{_cell(s['recall']):<30}{undecided}"
            )
    return "\n".join(lines)


def quality_figures(result: dict[str, Any], where: str) -> dict[str, Any]:
    """The contents of quality.json (``hy_eval.harness.scoring.quality_of`` reads it):
    each static matcher's figures overall and per language, pooled under ``matchers``
    and per source under ``by_source``, each with a ``source`` sentence built on
    ``where`` (the part and file measured)."""

    def per_lang(entry: dict[str, Any]) -> dict[str, Any]:
        return {"all": entry["all"], **entry["lang"]}

    static = {k: v for k, v in result["matchers"].items() if k != "judge"}
    sources = sorted({s for entry in static.values() for s in entry.get("source", {})})
    by_source = {}
    for source in sources:
        matchers = {n: per_lang(e["source"][source]) for n, e in static.items()}
        count = next(iter(matchers.values()))["all"]["pairs"]
        by_source[source] = {
            "source": f"the {source} pairs of {where} ({count} judged pairs)",
            "matchers": matchers,
        }
    return {
        "source": f"{where} ({result['pairs']} judged pairs)",
        "matchers": {n: per_lang(e) for n, e in static.items()},
        "by_source": by_source,
    }

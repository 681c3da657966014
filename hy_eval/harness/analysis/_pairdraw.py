"""``hy-eval matchers draw`` and ``matchers agree``: draw (predicted fact, gold fact) pairs
from real runs for people to judge, and measure how far two judges agree
(docs/metrics.md, "Measuring the matchers").

Drawing: in every case record of the given runs, each gold fact that has a ``text`` is
paired with each of the case's distinct predicted facts that is *related* to it (shares a
content feature of ``fuzzy``'s, or holds all the gold fact's keywords); a gold fact with no
related prediction is paired with its closest one instead (an *unrelated* pair). Pairs of
identical text are left out (nothing to judge), as are repeats of a pair already drawn.
When ``limit`` is given, related pairs come first (they are the pairs a matcher can get
wrong either way; all of them when there are fewer than ``limit``) and unrelated pairs
fill the rest, alternating between the languages, in
a seeded random order.

The file written has the pairs format with ``same`` and ``kind`` left empty (``null``)
for the judges to fill. The judges' blind copy (``blind_rows``) keeps only the pair id,
the language, the two facts and the speakers' names: no case id, no keywords (what the
keyword matcher reads), no matcher's verdict, and not the source or model the pairs were
drawn from.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hy_eval._files import replace_file
from hy_eval.harness.datasets import contains_all
from hy_eval.harness.runlog import CaseRecord
from hy_eval.harness.scoring import FUZZY_THRESHOLD, similarity


@dataclass(frozen=True)
class Candidate:
    case: str
    lang: str
    predicted: str
    gold: str
    names: tuple[str, ...]
    keywords: list[Any] | None
    score: float
    keyword_hit: bool

    @property
    def related(self) -> bool:
        """Whether the pair shares a content feature or the prediction holds the keywords."""
        return self.keyword_hit or self.score > 0

    @property
    def accepted(self) -> bool:
        """Whether ``keyword`` or ``fuzzy`` accepts the pair on its own."""
        return self.keyword_hit or self.score >= FUZZY_THRESHOLD


def _names(record: CaseRecord) -> tuple[str, ...]:
    """The speakers' names of a case (the user's, the named humans', the assistant's)."""
    names: list[str] = []
    for message in record.input.get("messages", []):
        name = message.get("name") if isinstance(message, dict) else None
        if isinstance(name, str) and name.strip() and name not in names:
            names.append(name)
    return tuple(names)


def case_candidates(record: CaseRecord) -> list[Candidate]:
    """The pairs one case record offers (module docstring)."""
    predicted = list(dict.fromkeys(f["text"] for f in record.facts or [] if f.get("text")))
    names = _names(record)
    out: list[Candidate] = []
    for gold in record.expect.get("facts", []):
        text = gold.get("text")
        if not text or not predicted:
            continue
        keywords = gold.get("keywords") or None
        scored = [
            Candidate(
                record.id,
                record.lang,
                p,
                text,
                names,
                keywords,
                round(similarity(p, text, names), 3),
                keywords is not None and contains_all(p, keywords),
            )
            for p in predicted
            if p.strip() != text.strip()
        ]
        related = [c for c in scored if c.related]
        if related:
            out.extend(related)
        elif scored:
            out.append(max(scored, key=lambda c: c.score))
    return out


def draw(
    records: Iterable[CaseRecord],
    limit: int | None = None,
    seed: int = 0,
    even_langs: bool = False,
) -> list[Candidate]:
    """The distinct candidate pairs of ``records``: all of them, or every related one and
    unrelated ones up to ``limit`` (module docstring). With ``even_langs`` the related
    pairs under ``limit`` are taken in turn from each language, so a run of more Chinese
    than English facts still gives half of each while both last."""
    seen: set[tuple[str, str]] = set()
    pool: list[Candidate] = []
    for record in records:
        for c in case_candidates(record):
            if (c.predicted, c.gold) not in seen:
                seen.add((c.predicted, c.gold))
                pool.append(c)
    rng = random.Random(seed)
    rng.shuffle(pool)
    if limit is None or limit >= len(pool):
        return pool
    related = [c for c in pool if c.related]
    # --even-langs: reversed, so that pop() takes them in the shuffled order.
    chosen = _in_turn(_by_lang(related[::-1]), [], limit) if even_langs else related[:limit]
    _in_turn(_by_lang(c for c in pool if not c.related), chosen, limit)
    rng.shuffle(chosen)
    return chosen


def _by_lang(pairs: Iterable[Candidate]) -> dict[str, list[Candidate]]:
    queues: dict[str, list[Candidate]] = {}
    for c in pairs:
        queues.setdefault(c.lang, []).append(c)
    return queues


def _in_turn(
    queues: dict[str, list[Candidate]], chosen: list[Candidate], limit: int
) -> list[Candidate]:
    """``chosen`` filled up to ``limit`` from the end of each language's queue in turn
    (languages in a fixed order), while any queue lasts."""
    while len(chosen) < limit and any(queues.values()):
        for lang in sorted(queues):
            if queues[lang] and len(chosen) < limit:
                chosen.append(queues[lang].pop())
    return chosen


#: Where a benchmark pair comes from (datasets/matcher_pairs/build_bench.py): a run of the
#: embedded model, a run of a capable model, or written by hand.
PAIR_SOURCES = ("embedded_run", "capable_run", "written")
#: The sources ``matchers draw`` can record: the pairs it draws come from runs.
RUN_SOURCES = ("embedded_run", "capable_run")


def pair_rows(
    chosen: Sequence[Candidate],
    prefix: str = "p",
    source: str | None = None,
    model: str | None = None,
) -> list[dict[str, Any]]:
    """The rows of a pairs file to be judged (``same`` and ``kind`` empty), with ids
    ``{prefix}0001``... (another prefix keeps another draw's ids apart in the benchmark)
    and, when given, the ``source`` and ``model`` the pairs were drawn from."""
    if source is not None and source not in RUN_SOURCES:
        raise ValueError(f"source {source!r}: expected one of {', '.join(RUN_SOURCES)}")
    rows = []
    for i, c in enumerate(chosen, 1):
        row: dict[str, Any] = {
            "pair": f"{prefix}{i:04d}",
            "case": c.case,
            "lang": c.lang,
            "gold": c.gold,
            "predicted": c.predicted,
            "names": list(c.names),
            "same": None,
            "kind": None,
        }
        if c.keywords is not None:
            row["keywords"] = c.keywords
        if source is not None:
            row["source"] = source
        if model is not None:
            row["model"] = model
        rows.append(row)
    return rows


BLIND_FIELDS = ("pair", "lang", "gold", "predicted", "names")


def blind_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The judges' copy of ``pair_rows``: what a judge may see, nothing more."""
    return [{k: row[k] for k in BLIND_FIELDS} for row in rows]


def write_rows(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two judges' yes/no verdicts on the same items (``None`` when
    chance agreement is total, e.g. both said "no" to everything)."""
    n = len(a)
    if n == 0 or n != len(b):
        raise ValueError("two verdict lists of the same, non-zero length are needed")
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


#: pair id -> one judge's verdict on it (``same``, ``kind``, ``note``).
Verdicts = dict[str, dict[str, Any]]


class VerdictFileError(ValueError):
    """A judge's verdict file that cannot be read, or two that do not cover the same pairs."""


def read_verdicts(path: Path) -> Verdicts:
    """``pair id -> {same, kind, note}`` of one judge's JSONL file."""
    out: dict[str, dict[str, Any]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise VerdictFileError(f"{path}: cannot read ({exc})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise VerdictFileError(f"{path}:{number}: not JSON") from None
        if not isinstance(row, dict) or not isinstance(row.get("pair"), str):
            raise VerdictFileError(f'{path}:{number}: needs a "pair" id')
        if not isinstance(row.get("same"), bool):
            raise VerdictFileError(f'{path}:{number}: "same" must be true or false')
        if row["pair"] in out:
            raise VerdictFileError(f"{path}:{number}: pair {row['pair']} judged twice")
        out[row["pair"]] = row
    if not out:
        raise VerdictFileError(f"{path}: no verdicts")
    return out


def agreement(a: Verdicts, b: Verdicts) -> dict[str, Any]:
    """Raw agreement and Cohen's kappa of two judges' verdicts (``read_verdicts``) on
    ``same``, the pairs they differ on, and how often they gave the same kind."""
    if set(a) != set(b):
        only = sorted(set(a) ^ set(b))
        raise VerdictFileError(
            f"the two files judge different pairs ({len(only)} in one only, e.g. {only[0]})"
        )
    ids = sorted(a)
    same_a = [a[i]["same"] for i in ids]
    same_b = [b[i]["same"] for i in ids]
    differ = [i for i in ids if a[i]["same"] != b[i]["same"]]
    return {
        "pairs": len(ids),
        "agree": len(ids) - len(differ),
        "kappa": cohen_kappa(same_a, same_b),
        "same_first": sum(same_a),
        "same_second": sum(same_b),
        "kind_agree": sum(a[i].get("kind") == b[i].get("kind") for i in ids),
        "differ": differ,
    }


def agreement_text(result: dict[str, Any]) -> str:
    """What ``matchers agree`` prints."""
    kappa = result["kappa"]
    n = result["pairs"]
    lines = [
        f"{n} pairs judged by both; same verdict on {result['agree']} "
        f"({result['agree'] / n:.1%}); Cohen's kappa "
        + ("n/a (no variation)" if kappa is None else f"{kappa:.3f}"),
        f"judged the same: {result['same_first']} by the first, {result['same_second']} by "
        f"the second; same kind on {result['kind_agree']} ({result['kind_agree'] / n:.1%})",
    ]
    if result["differ"]:
        lines.append(f"they differ on {len(result['differ'])}: " + ", ".join(result["differ"]))
    return "\n".join(lines)


def settled_rows(drawn: Path, a: Verdicts, b: Verdicts, s: Verdicts) -> list[dict[str, Any]]:
    """The judged pairs file: each drawn pair with ``same`` and ``kind`` where the two
    judges (``a``, ``b``) agree, and the settling judge's (``s``) where they do not (both
    judges' verdicts are kept in ``judges``). ``VerdictFileError`` when a disagreement is
    left unsettled."""
    rows = []
    try:
        lines = drawn.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise VerdictFileError(f"{drawn}: cannot read ({exc})") from None
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise VerdictFileError(f"{drawn}: a line is not JSON") from None
        pid = row.get("pair") if isinstance(row, dict) else None
        if pid not in a or pid not in b:
            raise VerdictFileError(f"{drawn}: pair {pid} is not judged by both judges")
        x, y = a[pid], b[pid]
        agreed = x["same"] == y["same"] and x.get("kind") == y.get("kind")
        if agreed:
            same, kind = x["same"], x.get("kind")
        elif pid in s:
            same, kind = s[pid]["same"], s[pid].get("kind")
        else:
            raise VerdictFileError(f"pair {pid}: the judges differ and it is not settled")
        if not isinstance(kind, str) or not kind:
            raise VerdictFileError(f"pair {pid}: no kind")
        row.update(same=same, kind=kind)
        row["judges"] = {
            "first": x["same"],
            "second": y["same"],
            "settled": None if agreed else s[pid]["same"],
        }
        rows.append(row)
    return rows

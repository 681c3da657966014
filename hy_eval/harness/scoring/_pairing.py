"""Many-to-many pairing for the ``strict`` matcher (docs/metrics.md, "Matchers"): what
the one-to-one assignment leaves unmatched, a capable model may still have stated.

- **A prediction that states several gold facts.** "于海三十八岁，住在青岛。" states both
  于海三十八岁。 and 于海住在青岛。, but one-to-one gives it to one of them. A gold fact left
  unmatched may share a prediction another gold fact took, when the two can each be given
  a part of it of their own (a clause or a sentence, ``clause_parts``) on which ``decide``
  accepts them (the newcomer with an agreement of at least ``SHARED_THRESHOLD``), and
  ``decide`` accepts it on the whole prediction too: the match holds for each on its own
  words. A prediction of one clause
  ("John likes coffee") is still one fact: it serves one gold fact ("The user likes
  coffee" stays unmatched).
- **A gold fact stated across two predictions.** "The user works at Stripe." and "The
  user is a data engineer in Dublin." together state "The user works at Stripe as a data
  engineer in Dublin."; each alone holds too few of its words. A gold fact still
  unmatched is paired with two predictions when their union holds every keyword item and
  at least ``UNION_THRESHOLD`` of the gold's content words, each adds a content word the
  other lacks, both are in the gold's language, and neither breaks a rule-3 check on its
  own (``_strict.sentence_problem``: cues, numbers, replaced values and relatives, frame).

Each (gold, prediction) pair is scored for attribution on its own (``_score``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

from hy_eval.harness.datasets import GoldFact, Keyword
from hy_eval.harness.scoring._fuzzy import max_weight_assignment
from hy_eval.harness.scoring._sentences import sentences
from hy_eval.harness.scoring._strict import (
    Decision,
    bounded_item,
    content,
    decide,
    script_of,
    sentence_problem,
)

#: The share of the gold's content words two predictions must hold together: their union
#: covers the gold, one word in five said otherwise at most. Far above the single
#: prediction's ``AGREEMENT_THRESHOLD`` (0.15): two loose predictions hold more words by
#: chance than one ("The user is launching Ghost Lane hot sauce." and "... allergen
#: labels ..." hold 3 of the 4 words of "Ifeoma will design the Ghost Lane labels.", all
#: but its main verb; 0.65 let that through on a capable model's answers).
UNION_THRESHOLD = 0.8

#: The agreement a gold fact needs on its part of a prediction another gold fact took:
#: above the single prediction's 0.15, since a second use of one prediction asks more
#: evidence. Chosen after reading the shared matches a capable model's answers gave (a
#: clause "Adaeze has Security+" at 0.25 for "Adaeze recommended Security+ as the user's
#: next certification"; every right one reached 0.33), so those figures flatter it.
SHARED_THRESHOLD = 0.3

#: Where a clause ends inside a sentence: a comma, an enumeration comma, a colon or a
#: semicolon, and an English " and " or " but " between two clauses.
_CLAUSE_END = re.compile(r"(?<=[，,、：:；;])\s*|\s+(?:and|but)\s+")


def clause_parts(text: str, names: tuple[str, ...]) -> list[str]:
    """The parts of a prediction a gold fact may claim as its own: each sentence
    (``_sentences``), cut at its clause ends. A text of one clause is one part."""
    out: list[str] = []
    for sentence in sentences(text, names):
        out.extend(c for c in _CLAUSE_END.split(sentence) if c and c.strip(" ，,、：:；;"))
    return out or [text]


@dataclass(frozen=True)
class Extra:
    """What the pairing after one-to-one gave a gold fact: the prediction it is scored
    on, the other prediction of a union (``also``), the agreement, and the part of a
    shared prediction that states it (``part``) or None."""

    predicted: int
    agreement: float
    also: int | None = None
    part: str | None = None


Decide = Callable[[GoldFact, str], Decision]


def _parts_fit(wanting: Sequence[int], accepts: Sequence[Sequence[float | None]]) -> bool:
    """Whether every gold fact of ``wanting`` (rows of ``accepts``) can be given a part
    of its own on which it is accepted (``accepts[row][part]``: agreement, or None)."""
    weights = [[1.0 + a if a is not None else 0.0 for a in accepts[g]] for g in wanting]
    chosen = max_weight_assignment(weights)
    return all(
        c is not None and accepts[g][c] is not None for g, c in zip(wanting, chosen, strict=True)
    )


def shared(
    golds: Sequence[GoldFact],
    texts: Sequence[str],
    taken: Sequence[int | None],
    whole: Sequence[Sequence[bool]],
    rank: Callable[[int, int], int],
    names: tuple[str, ...],
    judge: Decide,
) -> dict[int, Extra]:
    """Gold facts left unmatched (``taken[g]`` None) that share a prediction another gold
    fact took, each on a part of its own (module docstring, first rule). ``whole[g][p]``
    is ``decide`` on the whole prediction, which must accept too: a clause read alone
    loses the cues of the rest of its sentence (建议先上Scratch in a sentence of plans
    states no course taken)."""
    holders: dict[int, list[int]] = {}
    for g, p in enumerate(taken):
        if p is not None:
            holders.setdefault(p, []).append(g)
    parts = {p: clause_parts(texts[p], names) for p in holders}
    out: dict[int, Extra] = {}
    for g, p_now in enumerate(taken):
        if p_now is not None:
            continue
        found: list[tuple[int, float, int, str]] = []
        for p, on_p in holders.items():
            if len(parts[p]) < 2 or not whole[g][p]:
                continue  # one clause states one fact
            mine = [_agreement(judge(golds[g], part), SHARED_THRESHOLD) for part in parts[p]]
            if all(a is None for a in mine):
                continue
            others = [[_agreement(judge(golds[h], part)) for part in parts[p]] for h in on_p]
            if _parts_fit(range(len(on_p) + 1), [*others, mine]):
                best = max(range(len(mine)), key=lambda i: mine[i] or -1.0)
                found.append((rank(g, p), -(mine[best] or 0.0), p, parts[p][best]))
        if found:
            _, neg, p, part = min(found)
            out[g] = Extra(p, -neg, part=part)
            holders[p].append(g)
    return out


def _agreement(decision: Decision, floor: float = 0.0) -> float | None:
    """The agreement of an accepted decision that reaches ``floor``, else None."""
    return decision.agreement if decision.accepted and decision.agreement >= floor else None


def union_decision(
    gold: str,
    keywords: Sequence[Keyword],
    a: str,
    b: str,
    names: tuple[str, ...],
    threshold: float = UNION_THRESHOLD,
) -> Decision:
    """Whether predictions ``a`` and ``b`` state the gold fact together (module
    docstring, second rule)."""
    lang = script_of(gold)
    if script_of(a) != lang or script_of(b) != lang:
        return Decision(False, 0.0, "a union is read in the gold's language only")
    if not all(bounded_item(a, k, names) or bounded_item(b, k, names) for k in keywords):
        return Decision(False, 0.0, "a keyword is missing from both")
    gold_words = content(gold, names, False)
    held_a = gold_words & content(a, names, True)
    held_b = gold_words & content(b, names, True)
    if not gold_words or not held_a - held_b or not held_b - held_a:
        return Decision(False, 0.0, "one prediction adds nothing to the other")
    score = round(len(held_a | held_b) / len(gold_words), 6)
    if score < threshold:
        return Decision(False, score, f"union agreement {score:.2f} < {threshold}")
    for text in (a, b):
        problem = sentence_problem(gold, keywords, text, names)
        if problem:
            return Decision(False, score, problem)
    return Decision(True, score, "the union of two predictions agrees")


def unions(
    golds: Sequence[GoldFact],
    texts: Sequence[str],
    missing: Sequence[int],
    rank: Callable[[int, int], int],
    names: tuple[str, ...],
    check: Callable[[], None] = lambda: None,
) -> dict[int, Extra]:
    """Gold facts of ``missing`` that two predictions state together (module docstring,
    second rule): the pair with the highest union agreement, then the best ranks; the
    prediction the gold is scored on is the one with the better rank. ``check`` is
    called for each pair decided (the matcher's deadline raises there)."""
    out: dict[int, Extra] = {}
    for g in missing:
        gold = golds[g]
        text = gold.text or ""
        words = content(text, names, False)
        # What each prediction holds of the gold: its keyword items, then its content
        # words. A pair that misses an item or cannot reach the threshold is not decided;
        # with keywords, a gold fact no prediction holds an item of is skipped at once.
        items = {
            p: frozenset(i for i, k in enumerate(gold.keywords) if bounded_item(t, k, names))
            for p, t in enumerate(texts)
        }
        if gold.keywords and not any(items.values()):
            continue
        held = {p: words & content(t, names, True) for p, t in enumerate(texts)}
        related = [p for p in held if held[p] or items[p]]
        need = UNION_THRESHOLD * len(words)
        best: tuple[float, int, int, int] | None = None
        for a, b in combinations(related, 2):
            if len(held[a] | held[b]) < need or len(items[a] | items[b]) < len(gold.keywords):
                continue
            check()
            decision = union_decision(text, gold.keywords, texts[a], texts[b], names)
            if not decision.accepted:
                continue
            key = (-decision.agreement, rank(g, a) + rank(g, b), a, b)
            if best is None or key < best:
                best = key
        if best is not None:
            neg, _, a, b = best
            first, second = (a, b) if rank(g, a) <= rank(g, b) else (b, a)
            out[g] = Extra(first, -neg, also=second)
    return out


def decider(
    names: tuple[str, ...], threshold: float, check: Callable[[], None] = lambda: None
) -> Decide:
    """``decide`` for one gold fact and one text, with the matcher's names and threshold;
    ``check`` is called before each (the matcher's deadline raises there)."""

    def judge(gold: GoldFact, text: str) -> Decision:
        check()
        return decide(gold.text or "", gold.keywords, text, names, threshold)

    return judge

"""``datasets validate``'s checks of the gold facts against the default matcher
(docs/datasets.md, "Keywords"): every gold fact has a ``text`` no longer than a predicted
fact may be, no keyword is a single
Chinese character unless marked ``=`` (a whole word), and a prediction that repeats the
gold text word for word is matched to it by the ``strict`` matcher. A fact that fails
the last one could not be found by any answer, however right."""

from __future__ import annotations

from hy_eval.conversation._render import is_cjk
from hy_eval.harness.datasets import GoldFact, Suite
from hy_eval.harness.scoring._matching import speaker_words
from hy_eval.harness.scoring._strict import decide
from hy_eval.memory import Speakers
from hy_eval.memory._extract import MAX_FACT_CHARS


def fact_problems(fact: GoldFact, speakers: Speakers) -> list[str]:
    """What is wrong with one gold fact, each as ``field: message``."""
    if not fact.text:
        return ["text: every gold fact needs a text (the matcher compares it)"]
    if len(fact.text) > MAX_FACT_CHARS:
        return [
            f"text: {len(fact.text)} characters, but an extraction answer's fact holds at "
            f"most {MAX_FACT_CHARS} (a perfect answer would be cut)"
        ]
    out = []
    for item in fact.keywords:
        for k in [item] if isinstance(item, str) else item:
            if len(k) == 1 and is_cjk(k):
                out.append(
                    f"keywords: {k!r} is one Chinese character: give the word it is part of, "
                    f"or write '={k}' if the character is a word on its own"
                )
    if out:
        return out
    verdict = decide(fact.text, fact.keywords, fact.text, speaker_words(speakers))
    if not verdict.accepted:
        return [f"text: its own text is not matched to it by the strict matcher ({verdict.why})"]
    return []


def check_suite_gold(suite: Suite) -> list[str]:
    """``file:line: field: message`` for every problem of every gold fact of ``suite``."""
    out: list[str] = []
    for ref, text in suite.iter_lines():
        case = suite.parse_case(ref, text)
        for i, fact in enumerate(case.expect.facts):
            for problem in fact_problems(fact, case.speakers):
                out.append(f"{ref.file}:{ref.line}: {case.id}: expect.facts.{i}.{problem}")
    return out

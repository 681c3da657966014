"""One long memory must not hang a run in the scorer.

An external system's memories reach the scorer uncut (this package's pipeline cuts its
facts at the schema's 120 characters). ``strict`` was quadratic in a prediction's length
(40,000 characters without spaces took 1.9 s a pair, 1,000,000 about 20 minutes), and a
worker that stored a 1 MB memory stalled a run. Now:

- ``strict`` is linear in a prediction's length (``benchmarks/bench_strict_long.py``
  prints the time per pair at 10k, 40k and 1M characters);
- what is scored is bounded: a fact text over ``SCORED_TEXT_LIMIT`` characters is cut
  (ending in ``…``, as the pipeline cuts) and counted in the record's ``truncated`` as
  ``scored_texts_cut``, which the summary sums like the pipeline's cuts;
- matching has a per-case deadline: past it, that case errs with the reason and the run
  goes on (the per-case rule, docs/reliability.md).

The cases are scored through ``run_case`` with a stand-in system that answers as a
worker does (``store_run``), so no process or server is started.
"""

import asyncio
import time

import pytest

from hy_eval.harness.datasets import Case
from hy_eval.harness.run._casestep import run_case
from hy_eval.harness.scoring import _matching
from hy_eval.harness.scoring._matching import SCORED_TEXT_LIMIT
from hy_eval.harness.scoring._strict import content_sequence, decide
from hy_eval.harness.systems._storediff import store_run

#: A long memory: 1,000,000 characters, without spaces (Chinese) or with them.
LONG = {
    "zh": "用户每周五和王伟一起吃午饭，" * (1_000_000 // 14),
    "en": "The user has lunch with Tom on Fridays and " * (1_000_000 // 43),
}
GOLD = {
    "zh": ("用户每周五和王伟一起吃午饭。", ["午饭"]),
    "en": ("The user has lunch with Tom on Fridays.", ["lunch"]),
}


def _case(lang: str, n: int = 0) -> Case:
    text, keywords = GOLD[lang]
    other = "王伟" if lang == "zh" else "Tom"
    return Case.model_validate(
        {
            "id": f"long-{lang}-{n}",
            "lang": lang,
            "rules": ["A1"],
            "messages": [
                {"role": "user", "content": text},
                {"role": "assistant", "name": other, "content": "OK"},
            ],
            "expect": {
                "facts": [{"subject": "user", "owner": "user", "keywords": keywords, "text": text}]
            },
        }
    )


class StoredMemories:
    """A system under test that stores the given memories for every case, answered as
    an external worker's answer is read (``store_run``: no owners, no profile)."""

    name = "stand-in"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    async def add_case(self, case, *, label, repeat):
        after = [{"id": str(i), "text": t} for i, t in enumerate(self.texts)]
        return store_run(case, {"ok": True, "before": [], "after": after}, [])

    async def close(self):
        pass


def _run(case: Case, system: StoredMemories):
    return asyncio.run(run_case(case, None, None, None, True, system=system))


@pytest.fixture(scope="module", autouse=True)
def _loaded():
    """The segmenter's dictionaries loaded before anything is timed (a second or more)."""
    for lang in GOLD:
        _run(_case(lang, 9), StoredMemories([GOLD[lang][0] + " " + GOLD[lang][0]]))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_1mb_memory_is_cut_counted_and_scored_in_well_under_a_second(lang):
    """A 1 MB memory (without spaces, and with them) beside the right one: the case is
    scored, the long text cut to the limit and counted; before, it took about 20 minutes
    a pair."""
    right = GOLD[lang][0]
    started = time.perf_counter()
    rec = _run(_case(lang), StoredMemories([LONG[lang], right]))
    took = time.perf_counter() - started
    assert rec.status == "ok" and rec.score.passed
    assert rec.truncated == {"scored_texts_cut": 1}
    cut = rec.facts[0]["text"]
    assert len(cut) == SCORED_TEXT_LIMIT and cut.endswith("…")
    assert LONG[lang].startswith(cut[:-1])
    assert took < 1.0, f"{took:.2f} s"


def _seconds(call, *args) -> float:
    # CPU seconds of this process, not wall time: the test command runs two workers on
    # two cores, and a wall clock also counts the turns other processes take on this core
    # (it read 16 to 18 times between the lengths there, against about 8 alone).
    started = time.process_time()
    call(*args)
    return time.process_time() - started


@pytest.mark.parametrize(
    ("lang", "part"),
    [
        # Without spaces and without a cut mark at the end: ``_CUT_TAIL`` (``\\S*…$``)
        # tried every start of the run and failed at each (40,000 characters: 5.8 s).
        ("zh", lambda text: decide(*GOLD["zh"], text, ("王伟",))),
        # ``_verb_like`` rebuilt the list of the earlier words for every word.
        ("en", lambda text: content_sequence(text, ("Tom",))),
    ],
    ids=["decide-without-spaces", "content-sequence-with-spaces"],
)
def test_strict_is_linear_in_the_length_of_a_prediction(lang, part):
    """Eight times the text costs about eight times the time, not sixty-four (the cut
    above bounds what a run scores; this is ``strict`` itself, uncut)."""
    part(LONG[lang][:200])  # the segmenter's dictionary loaded once
    # Distinct texts: the parts cache their results by text.
    # The least of three timings of each length (distinct offsets: distinct texts).
    t_short = min(_seconds(part, LONG[lang][k : k + 5_000]) for k in (2, 3, 4))
    t_long = min(_seconds(part, LONG[lang][k : k + 40_000]) for k in (5, 6, 7))
    assert t_long < 12 * t_short + 0.05, f"5k: {t_short:.3f} s, 40k: {t_long:.3f} s"


def test_a_case_past_the_scoring_deadline_errs_and_the_next_case_is_scored(monkeypatch):
    """The per-case rule (docs/reliability.md): a case whose matching runs past the
    deadline is ``status: error`` with the reason; the next case is scored as usual."""
    monkeypatch.setattr(_matching, "SCORING_DEADLINE_S", 0.05)
    real = _matching.decide

    def slow(gold, keywords, predicted, *args, **kwargs):
        if predicted.startswith("slow"):
            time.sleep(0.03)
        return real(gold, keywords, predicted, *args, **kwargs)

    monkeypatch.setattr(_matching, "decide", slow)
    slow_rec = _run(_case("en", 1), StoredMemories([f"slow {i}" for i in range(10)]))
    assert slow_rec.status == "error"
    assert slow_rec.error.startswith("scoring deadline: matching took over 0.05 s")
    assert slow_rec.score.counts["error_rate"] == (1, 1)
    rec = _run(_case("en", 2), StoredMemories([GOLD["en"][0]]))
    assert rec.status == "ok" and rec.score.passed

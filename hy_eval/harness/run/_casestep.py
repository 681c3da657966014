"""One case of a run: the system under test adds it (``harness.systems``; default this
package's own pipeline), the scorer scores it, and the case's
:class:`~hy_eval.harness.runlog._files.CaseRecord` comes back.

A provider error or an unexpected exception costs this case only (its record says why);
a replay-only cache miss or a stopped model stops the run and is raised.
"""

from __future__ import annotations

import time
from typing import Any

from hy_eval.harness.datasets import Case
from hy_eval.harness.runlog import CaseRecord
from hy_eval.harness.scoring import (
    CaseScore,
    Judge,
    Matcher,
    Outcome,
    ScoringDeadline,
    VerdictMatcher,
    score_case,
    static_matcher,
)
from hy_eval.harness.systems import CaseFailed, MemorySystem, OwnPipeline
from hy_eval.llm import (
    CacheMiss,
    LLMClient,
    ModelProcessDied,
    PriceTable,
    ProviderError,
    RunStopped,
)
from hy_eval.llm.core import short_text
from hy_eval.memory import MemoryStore, PromptLibrary


def case_label(case: Case, repeat: int) -> str:
    """How messages name the case: its id, and the repeat when there are repeats."""
    return case.id if repeat == 0 else f"{case.id} repeat {repeat}"


async def run_case(
    case: Case,
    llm: LLMClient,
    prompts: PromptLibrary,
    prices: PriceTable,
    guard: bool,
    *,
    repeat: int = 0,
    temperature: float = 0.0,
    store: MemoryStore | None = None,
    matcher: str = "strict",
    judge: Judge | None = None,
    system: MemorySystem | None = None,
) -> CaseRecord:
    """One case through ``system`` (default: this package's pipeline on ``store``, or a
    new in-memory store), then scored. A provider error or a failure of the system marks
    the case failed; a replay-only cache miss stops the run."""
    if system is None:
        system = OwnPipeline(llm, prompts, prices, guard, temperature=temperature, store=store)
    started = time.perf_counter()
    fields: dict[str, Any] = _case_fields(case, repeat)
    label = case_label(case, repeat)
    outcome = Outcome()
    try:
        run = await system.add_case(case, label=label, repeat=repeat)
    except ProviderError as exc:
        outcome.error = f"{exc.kind}: {exc}"
    except CaseFailed as exc:
        outcome.error = f"{system.name}: {exc}"
    except ModelProcessDied as exc:
        exc.case_id = label  # the run's failure; its message names the case it was on
        raise
    except (CacheMiss, RunStopped):  # the run's failures, not this case's
        raise
    except Exception as exc:
        # Anything else (a bug, or an answer no check foresaw) costs this case, never the
        # run: the healthy cases are kept and the reason is in the record.
        outcome.error = f"internal error: {type(exc).__name__}: {short_text(str(exc))}"
    else:
        outcome = run.outcome
        fields.update(run.fields)
    if outcome.error is not None:
        fields.update(status="error", error=outcome.error)
        # What the system cannot measure stays n/m on a failed case too.
        outcome.not_measured = frozenset(getattr(system, "not_measured", frozenset()))
    score = await _score(case, outcome, fields, matcher, judge, label)
    fields["latency_s"] = round(time.perf_counter() - started, 4)
    fields["score"] = score.record()
    return CaseRecord(**fields)


async def _score(
    case: Case,
    outcome: Outcome,
    fields: dict[str, Any],
    matcher: str,
    judge: Judge | None,
    label: str,
) -> CaseScore:
    """The case's score. Matching (the judge's model calls included) is under the same
    rule as the pipeline: an unexpected exception, or matching past its deadline
    (``SCORING_DEADLINE_S``), costs this case, never the run."""
    try:
        return score_case(case, outcome, await _matcher(case, outcome, matcher, judge, label))
    except ModelProcessDied as exc:
        exc.case_id = label
        raise
    except (CacheMiss, RunStopped):
        raise
    except ScoringDeadline as exc:
        outcome.error = f"scoring deadline: {exc}"
        fields.update(status="error", error=outcome.error)
        return score_case(case, outcome)
    except Exception as exc:
        outcome.error = (
            f"internal error while matching ({matcher}): "
            f"{type(exc).__name__}: {short_text(str(exc))}"
        )
        fields.update(status="error", error=outcome.error)
        return score_case(case, outcome)


async def _matcher(
    case: Case, outcome: Outcome, name: str, judge: Judge | None, label: str
) -> Matcher:
    """The case's matcher; for ``judge``, with the judge's verdicts on its pairs (asked
    only when the pipeline ran and there are facts on both sides)."""
    if name != "judge":
        return static_matcher(name, case.speakers)
    if judge is None:
        raise ValueError("the judge matcher needs a Judge (_judge.build_judge)")
    golds, texts = case.expect.facts, [f["text"] for f in outcome.facts]
    if outcome.error is not None or not golds or not texts:
        return VerdictMatcher({})
    return await judge.matcher(golds, texts, case.lang, label)


def _case_fields(case: Case, repeat: int) -> dict[str, Any]:
    """The record's fields that the case alone decides: labels, input and gold."""
    return {
        "id": case.id,
        "repeat": repeat,
        "lang": case.lang,
        "rules": case.rules,
        "tags": case.tags,
        "input": {
            "messages": case.messages,
            "system": case.system,
            "history": case.history,
            "existing": [m.model_dump() for m in case.existing],
            **({"aliases": case.aliases} if case.aliases else {}),
        },
        "expect": case.expect.model_dump(),
    }

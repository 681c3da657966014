"""Full-size run folders made without a model, for the pages' browser tests and
``benchmarks/bench_pages.py``.

The shipped suite's cases (457) are repeated under new ids (``ID~k``) up to the size
asked for. Each case gets a scripted extraction (its gold facts worded as a perfect model
would, ``scripted_suite.perfect_extraction``) with seeded mistakes: a fact left out, a
fact about the wrong subject, a wrong owner. The records are scored by the real scorer
(``score_case``), so their checks, counts and details are those of a real run. Run B
makes different mistakes from run A on a chosen share of the cases and has a changed
system prompt, so a comparison of the two has flipped cases, cases changed on some check
only, and prompts that differ.

    write_pair(folder, cases=1200, changed=800) -> (run_a, run_b)
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from hy_eval.conversation import render_conversation
from hy_eval.harness import load_suite, write_reports
from hy_eval.harness.runlog import CallCounts, RunManifest
from hy_eval.harness.scoring import Outcome, score_case
from tests.harness.scripted_suite import perfect_extraction

ROOT = Path(__file__).resolve().parents[2]

#: What run B's system prompt adds to A's: a prompt change under comparison.
B_RULE = "\n6. A fact about the assistant's suggestion that the user accepts belongs to the user."


def _suite_cases(n: int) -> list[Any]:
    """``n`` cases: the shipped suite's, then the same again under ``ID~k`` ids."""
    source = load_suite("multi_speaker").cases
    out = []
    for k in range(n):
        case = source[k % len(source)]
        if k >= len(source):
            case = case.model_copy(update={"id": f"{case.id}~{k // len(source)}"})
        out.append(case)
    return out


def _mistaken(case: Any, rng: random.Random, rate: float) -> dict[str, Any]:
    """The case's perfect extraction with, at ``rate`` each, a fact left out, a fact
    given to another subject and a wrong owner."""
    answer = perfect_extraction(case)
    facts = answer["facts"]
    if facts and rng.random() < rate:
        facts.pop(rng.randrange(len(facts)))
    if facts and rng.random() < rate:
        i = rng.randrange(len(facts))
        others = [s for s in case.named_speakers] or ["The assistant"]
        facts[i] = {**facts[i], "text": f"{rng.choice(others)} {facts[i]['text']}"}
    if facts and rng.random() < rate:
        i = rng.randrange(len(facts))
        facts[i] = {**facts[i], "owner": "agent" if facts[i]["owner"] == "user" else "user"}
    return answer


def _system(lang: str, variant: str) -> str:
    """A system prompt of realistic length: the shipped extraction template's text."""
    text = (ROOT / "prompts" / "default" / f"extract.{lang}.j2").read_text("utf-8")
    return text + (B_RULE if variant == "b" else "")


def _record(case: Any, answer: dict[str, Any], variant: str) -> dict[str, Any]:
    """One case record as a run writes it, scored by the real scorer."""
    outcome = Outcome(facts=answer["facts"], profile=answer.get("basic_info") or {})
    score = score_case(case, outcome).record()
    rendered = render_conversation(case.normalised)
    return {
        "id": case.id,
        "repeat": 0,
        "lang": case.lang,
        "rules": case.rules,
        "tags": case.tags,
        "input": {
            "messages": case.messages,
            "existing": [m.model_dump(exclude_none=True) for m in case.existing],
        },
        "expect": case.expect.model_dump(mode="json"),
        "rendered": rendered,
        "stages": {
            "extract": {
                "template": f"default/extract.{case.lang}.j2",
                "system": _system(case.lang, variant),
                "user": f"Conversation:\n{rendered}\n\nWrite the memories as JSON.",
                "raw": json.dumps(answer, ensure_ascii=False),
            }
        },
        "facts": answer["facts"],
        "basic_info": answer.get("basic_info") or {},
        "score": score.to_data(),
    }


def _manifest(variant: str) -> dict[str, Any]:
    return {
        "suite": "multi_speaker",
        "provider": "openai",
        "model": "generated",
        "params": {"variant": "default", "guard": True, "matcher": "keyword"},
        "dataset_hash": "generated" * 4,
        "git": {"commit": "generated-" + variant, "dirty": False},
        "finished": "2026-01-01T00:00:00+00:00",
    }


def write_run(folder: Path, records: list[dict[str, Any]], variant: str) -> Path:
    """A run folder of ``records`` with its summary, report.md and report.html."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = _manifest(variant)
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    (folder / "cases.jsonl").write_text(lines, encoding="utf-8")
    write_reports(folder, RunManifest.model_validate(manifest), CallCounts(), 0.0)
    return folder


def write_single(folder: Path, cases: int = 457, seed: int = 0) -> Path:
    """One run of ``cases`` cases (by default the size of the shipped suite)."""
    rng = random.Random(seed)
    records = [_record(c, _mistaken(c, rng, 0.25), "a") for c in _suite_cases(cases)]
    return write_run(folder, records, "a")


def write_pair(
    folder: Path, cases: int = 1200, changed: int = 800, seed: int = 0
) -> tuple[Path, Path]:
    """Runs A and B of ``cases`` cases in ``folder/a`` and ``folder/b``. B answers
    ``changed`` cases afresh (other mistakes, at a higher rate, so most of them change
    some verdict) and the rest as A did."""
    rng = random.Random(seed)
    suite = _suite_cases(cases)
    redo = set(rng.sample(range(cases), changed))
    recs_a, recs_b = [], []
    for k, case in enumerate(suite):
        answer_a = _mistaken(case, rng, 0.25)
        answer_b = _mistaken(case, rng, 0.45) if k in redo else answer_a
        recs_a.append(_record(case, answer_a, "a"))
        recs_b.append(_record(case, answer_b, "b"))
    return write_run(folder / "a", recs_a, "a"), write_run(folder / "b", recs_b, "b")

"""Whether a case's ``untouched`` memories can catch a cross-subject merge (issue 18;
``hy-eval datasets validate --merges``, docs/datasets.md).

An untouched memory measures a merge only when a wrong answer could merge it: the
pipeline must show it to the reconcile step and the guard must see two subjects. So for
every untouched memory of a case whose ``expect.measures_merge`` is true:

(a) the store search the pipeline runs for each new fact (``MemoryStore.search`` with the
    client's ``top_k``, in a store seeded as the runner seeds it) returns the memory for at
    least one gold fact. Each gold fact is searched with its reference ``text`` when it
    has one and with its keywords (a group's first member) after its subject's words;
    either query returning the memory counts;
(b) the memory's subject, read back as the guard reads it (the stored subject matched
    against the case's speakers, ``target_subject``), is the user, the assistant or a
    named speaker, and every gold fact that returned it has another subject (a gold fact
    of the same subject could rightly change it: use ``expect.operations`` then).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from hy_eval.conversation import normalise_messages, render_conversation
from hy_eval.harness._dataset import Case, Suite
from hy_eval.harness._expect import GoldFact
from hy_eval.harness._keywords import first_forms
from hy_eval.memory import MemoryClient, MemoryStore, same_subject
from hy_eval.memory._reconcile import target_subject
from hy_eval.memory._subjects import Subject

#: The pipeline's own number of memories searched per fact.
TOP_K: int = inspect.signature(MemoryClient).parameters["top_k"].default

_SUBJECT_WORDS = {
    "en": {"user": "The user", "assistant": "The assistant"},
    "zh": {"user": "用户", "assistant": "助手"},
}


def gold_queries(case: Case, gold: GoldFact) -> list[str]:
    """The texts a gold fact is searched with: its reference text, then its keywords
    after its subject's words ("John black coffee morning")."""
    words = _SUBJECT_WORDS[case.lang].get(gold.subject, gold.subject)
    sep = " " if case.lang == "en" else ""
    keywords = sep.join(first_forms(gold.keywords))
    return [q for q in (gold.text, f"{words}{sep}{keywords}") if q]


def _gold_subject(subject: str) -> Subject:
    if subject in ("user", "assistant"):
        return Subject(subject)  # type: ignore[arg-type]
    return Subject("named", subject)


def merge_problems(case: Case) -> list[str]:
    """``field: message`` for each untouched memory that cannot measure a merge."""
    if not case.expect.measures_merge or not case.expect.untouched:
        return []
    store = MemoryStore()
    try:
        ids: dict[str, int] = {}
        with store.transaction():
            if case.history:
                text = render_conversation(normalise_messages(case.history))
                store.add_l1_raw(case.user_id, text)
            for mem in case.existing:
                ids[mem.id] = store.insert(case.user_id, mem.text, mem.owner, "seed")
        found_by: dict[int, list[int]] = {}
        for g, gold in enumerate(case.expect.facts):
            for query in gold_queries(case, gold):
                for hit in store.search(query, case.user_id, TOP_K):
                    if g not in found_by.setdefault(hit.id, []):
                        found_by[hit.id].append(g)
        stored = store.subjects(list(ids.values()))
    finally:
        store.close()
    texts = {m.id: m.text for m in case.existing}
    problems: list[str] = []
    for mid in case.expect.untouched:
        golds = found_by.get(ids[mid], [])
        subject = target_subject(texts[mid], stored.get(ids[mid]), case.speakers)
        problems += _problems(case, mid, golds, subject)
    return problems


def _problems(case: Case, mid: str, golds: list[int], subject: Subject) -> Iterable[str]:
    where = f"expect.untouched: {mid}"
    if not golds:
        yield (
            f"{where} is not returned by the store search for any gold fact (share content "
            "words with the new fact, or set expect.measures_merge false)"
        )
        return
    if subject.kind not in ("user", "named", "assistant"):
        yield (
            f"{where} has subject {subject.key}, not a speaker of the case (write it as "
            "'The user ...', '<speaker> ...' or 'The assistant ...')"
        )
        return
    same = [g for g in golds if same_subject(_gold_subject(case.expect.facts[g].subject), subject)]
    if same:
        numbers = ", ".join(str(g) for g in same)
        yield (
            f"{where} ({subject.key}) is returned for gold fact(s) {numbers} of the same "
            "subject, which may rightly change it (use expect.operations)"
        )


def check_suite_merges(suite: Suite) -> list[str]:
    """``file:line: field: message`` for every problem of every case of ``suite``."""
    out: list[str] = []
    for ref, text in suite.iter_lines():
        out += [f"{ref.file}:{ref.line}: {p}" for p in merge_problems(suite.parse_case(ref, text))]
    return out

"""Whether a case's ``untouched`` memories can catch a cross-subject merge (R1, E1;
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

And for every memory ``expect.operations`` expects to change: some gold fact of the
memory's own subject returns it when searched with its reference text alone, the query a
perfect answer makes (else the reconcile step never sees it and no answer can meet the
expectation).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass

from hy_eval.conversation import normalise_messages, render_conversation
from hy_eval.harness.datasets._expect import GoldFact, gold_subject
from hy_eval.harness.datasets._keywords import first_forms
from hy_eval.harness.datasets._schema import Case, Suite
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


@dataclass(frozen=True)
class Retrieval:
    """What the store search finds for a case's gold facts: for each existing memory id,
    the gold facts (by index) whose queries return it, and its subject as the guard reads
    it."""

    found_by: dict[str, list[int]]
    subjects: dict[str, Subject]

    def measures_merge(self, case: Case, memory_id: str) -> bool:
        """Returned for some gold fact, a speaker's subject, and every gold fact returning
        it has another subject: a wrong answer could merge it across subjects."""
        return not list(_untouched_problems(case, memory_id, self))


def retrieval(case: Case, text_only: bool = False) -> Retrieval:
    """Seed a store with the case's history and existing memories as the runner does, and
    search it for every gold fact as the pipeline does (``text_only``: with its reference
    text alone, the query a perfect answer makes)."""
    store = MemoryStore()
    try:
        ids: dict[str, int] = {}
        with store.transaction():
            if case.history:
                text = render_conversation(normalise_messages(case.history))
                store.add_l1_raw(case.user_id, text)
            for mem in case.existing:
                ids[mem.id] = store.insert(case.user_id, mem.text, mem.owner, "seed")
        by_db: dict[int, list[int]] = {}
        for g, gold in enumerate(case.expect.facts):
            queries = [gold.text] if text_only and gold.text else gold_queries(case, gold)
            for query in queries:
                for hit in store.search(query, case.user_id, TOP_K):
                    if g not in by_db.setdefault(hit.id, []):
                        by_db[hit.id].append(g)
        stored = store.subjects(list(ids.values()))
    finally:
        store.close()
    return Retrieval(
        {mid: by_db.get(db, []) for mid, db in ids.items()},
        {m.id: target_subject(m.text, stored.get(ids[m.id]), case.speakers) for m in case.existing},
    )


def merge_problems(case: Case) -> list[str]:
    """``field: message`` for each untouched memory that cannot measure a merge (when the
    case measures merges) and each memory expected to change that no gold fact of its own
    subject finds (the reconcile step would never see it)."""
    changing = [m for m in case.expect.operations if case.expect.expected_ops(m) != ("NONE",)]
    untouched = case.expect.untouched if case.expect.measures_merge else []
    if not changing and not untouched:
        return []
    found = retrieval(case)
    problems: list[str] = []
    for mid in untouched:
        problems += _untouched_problems(case, mid, found)
    # A memory to change must be found by the query a perfect answer makes, its gold
    # fact's text, as the pipeline searches with each predicted fact's text (in
    # ms-zh-2075 the keyword query found 用户在备考日语N2。 while the text query did not).
    if changing:
        found = retrieval(case, text_only=True)
    for mid in changing:
        subject = found.subjects[mid]
        own = [
            g
            for g in found.found_by[mid]
            if same_subject(gold_subject(case.expect.facts[g].subject), subject)
        ]
        if not own:
            problems.append(
                f"expect.operations: {mid} ({subject.key}) is not returned by the store search "
                "for any gold fact of its subject, so reconcile cannot change it"
            )
    return problems


def _untouched_problems(case: Case, mid: str, found: Retrieval) -> Iterable[str]:
    where = f"expect.untouched: {mid}"
    golds, subject = found.found_by[mid], found.subjects[mid]
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
    same = [g for g in golds if same_subject(gold_subject(case.expect.facts[g].subject), subject)]
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

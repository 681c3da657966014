"""Reconcile: one model call deciding, per new fact, ADD/UPDATE/DELETE/SUPERSEDE/NONE
against related existing memories (R1), then the cross-subject guard (R2) and the
fallback (R3).

The model sees existing memories under short ids (``m1``, ``m2``...), never database ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hy_eval.llm import Completion, LLMClient, ProviderError, Request, Usage
from hy_eval.memory._extract import Fact, cut_text
from hy_eval.memory._prompts import PromptLibrary, RenderedPrompt
from hy_eval.memory._store import Memory
from hy_eval.memory._subjects import Speakers, Subject, same_subject, subject_of

OPS = ("ADD", "UPDATE", "DELETE", "SUPERSEDE", "NONE")
CHANGING_OPS = frozenset({"UPDATE", "DELETE", "SUPERSEDE"})

#: The answer schema named ``memory_reconcile`` (its general form; each request narrows
#: it with ``reconcile_schema``).
RECONCILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "operations": {
            "type": "array",
            "maxItems": 24,
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": list(OPS)},
                    "fact": {"type": "integer"},
                    "target_ids": {"type": "array", "maxItems": 4, "items": {"type": "string"}},
                    "text": {"type": "string", "maxLength": 120},
                },
                "required": ["op", "fact", "target_ids", "text"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["operations"],
    "additionalProperties": False,
}


_OP_SCHEMA = RECONCILE_SCHEMA["properties"]["operations"]
#: The general schema's limits, enforced on every answer (see ``interpret``).
MAX_OPERATIONS: int = _OP_SCHEMA["maxItems"]
MAX_TARGETS: int = _OP_SCHEMA["items"]["properties"]["target_ids"]["maxItems"]
MAX_OP_TEXT_CHARS: int = _OP_SCHEMA["items"]["properties"]["text"]["maxLength"]


def reconcile_schema(n_facts: int, short_ids: list[str]) -> dict[str, Any]:
    """The schema for one request: exactly one operation per fact, fact numbers in range,
    target ids among those shown. Constrained decoding (llama.cpp) then cannot produce an
    unknown id; other providers get the same precise contract."""
    item = RECONCILE_SCHEMA["properties"]["operations"]["items"]
    props = dict(item["properties"])
    props["fact"] = {"type": "integer", "enum": list(range(n_facts))}
    props["target_ids"] = {
        "type": "array",
        "maxItems": min(4, len(short_ids)),
        "items": {"type": "string", "enum": list(short_ids)},
    }
    return {
        **RECONCILE_SCHEMA,
        "properties": {
            "operations": {
                "type": "array",
                "minItems": n_facts,
                "maxItems": n_facts,
                "items": {**item, "properties": props},
            }
        },
    }


class OperationAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: Literal["ADD", "UPDATE", "DELETE", "SUPERSEDE", "NONE"]
    fact: int
    target_ids: list[str] = Field(default_factory=list)
    text: str = ""


class ReconcileAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operations: list[OperationAnswer]


@dataclass(frozen=True)
class Operation:
    """One operation. ``targets`` are database ids of existing memories."""

    op: str
    fact: int
    targets: tuple[int, ...]
    text: str
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "fact": self.fact,
            "targets": list(self.targets),
            "text": self.text,
            **({"note": self.note} if self.note else {}),
        }


@dataclass(frozen=True)
class GuardEvent:
    """An operation the guard turned into ADD (R2): ``reason`` is ``cross_subject`` (two
    known, different subjects) or ``unknown_subject`` (a side whose subject cannot be told,
    so no merge)."""

    op: str
    fact: int
    target: int
    fact_subject: str
    target_subject: str
    reason: str = "cross_subject"

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Reconciliation:
    raw: list[Operation]
    applied: list[Operation]
    guard_events: list[GuardEvent] = field(default_factory=list)
    fallback: str | None = None
    parse_error: str | None = None
    prompt: RenderedPrompt | None = None
    completion: Completion | None = None
    short_ids: dict[str, int] = field(default_factory=dict)
    #: What was cut to the schema's limits: ``operations_dropped``, ``target_ids_dropped``,
    #: ``operation_texts_cut`` (only counts above zero).
    truncated: dict[str, int] = field(default_factory=dict)

    @property
    def usage(self) -> Usage:
        return self.completion.usage if self.completion else Usage()

    @property
    def undecided(self) -> int:
        """Guard events where a subject could not be told (added, not merged)."""
        return sum(e.reason == "unknown_subject" for e in self.guard_events)


def add_all(facts: list[Fact], note: str | None = None) -> list[Operation]:
    return [Operation("ADD", i, (), f.text, note) for i, f in enumerate(facts)]


def interpret(
    answer: ReconcileAnswer,
    facts: list[Fact],
    short_ids: dict[str, int],
    truncated: dict[str, int] | None = None,
) -> tuple[list[Operation] | None, str | None]:
    """Operations with database ids, or (None, reason) when the answer cannot be used.

    Facts the answer leaves out are ADDed; a second operation for the same fact is
    ignored. Unknown ids or fact numbers make the whole answer unusable (R3). A target id
    named twice counts once (``UPDATE ["m1", "m1"]`` would otherwise update m1
    and then delete it as merged). The answer is cut to the schema's limits first
    (``MAX_OPERATIONS`` operations, ``MAX_TARGETS`` targets, ``MAX_OP_TEXT_CHARS``
    characters); what was cut is counted in ``truncated``.
    """
    counts = {
        "operations_dropped": max(0, len(answer.operations) - MAX_OPERATIONS),
        "target_ids_dropped": 0,
        "operation_texts_cut": 0,
    }
    ops: list[Operation] = []
    seen: set[int] = set()
    for item in answer.operations[:MAX_OPERATIONS]:
        if not 0 <= item.fact < len(facts):
            return None, f"unknown fact number {item.fact}"
        unknown = list(dict.fromkeys(t for t in item.target_ids if t not in short_ids))
        if unknown:
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            return None, f"unknown memory id(s) {', '.join(unknown[:5])}{more}"
        if item.op in CHANGING_OPS and not item.target_ids:
            return None, f"{item.op} for fact {item.fact} without a target id"
        if item.fact in seen:
            continue
        seen.add(item.fact)
        named = list(dict.fromkeys(item.target_ids))  # first mention kept, in order
        note = None
        if len(named) < len(item.target_ids):
            note = f"{len(item.target_ids) - len(named)} repeated target id(s) ignored"
        counts["target_ids_dropped"] += max(0, len(named) - MAX_TARGETS)
        text = cut_text(item.text.strip(), MAX_OP_TEXT_CHARS) or facts[item.fact].text
        counts["operation_texts_cut"] += len(item.text.strip()) > MAX_OP_TEXT_CHARS
        targets = tuple(short_ids[t] for t in named[:MAX_TARGETS]) if item.op != "ADD" else ()
        ops.append(Operation(item.op, item.fact, targets, text, note))
    for i, f in enumerate(facts):
        if i not in seen:
            ops.append(Operation("ADD", i, (), f.text, "left out by the model"))
    ops.sort(key=lambda o: o.fact)
    if truncated is not None:
        truncated.update({k: n for k, n in counts.items() if n})
    return ops, None


def target_subject(text: str, stored: str | None, speakers: Speakers) -> Subject:
    """An existing memory's subject for the guard: the one stored when it was written
    (A5), matched against this conversation's people (a stored name that is a form
    of a speaker's or of the user's name is that speaker). A memory stored without a known
    subject is read back now, with this conversation's speakers."""
    subject = Subject.from_key(stored)
    if subject.kind == "unknown":
        return subject_of(text, speakers)
    if subject.kind in ("named", "other") and subject.name:
        now = subject_of(subject.name, speakers)
        return now if now.kind in ("user", "named") else subject
    return subject


def guard(
    ops: list[Operation],
    facts: list[Fact],
    memories: dict[int, Memory],
    speakers: Speakers,
    stored: dict[int, str] | None = None,
) -> tuple[list[Operation], list[GuardEvent]]:
    """R2: an UPDATE/DELETE/SUPERSEDE becomes ADD unless the fact and every target have the
    same known subject. ``stored`` holds the targets' stored subject keys. ``unknown`` is no
    wildcard: an operation with a side that cannot be told is added, not merged, and its
    events have reason ``unknown_subject``."""
    out: list[Operation] = []
    events: list[GuardEvent] = []
    for op in ops:
        if op.op not in CHANGING_OPS:
            out.append(op)
            continue
        fact_subject: Subject = subject_of(facts[op.fact].text, speakers)
        found: list[GuardEvent] = []
        for t in op.targets:
            target = target_subject(memories[t].text, (stored or {}).get(t), speakers)
            if same_subject(fact_subject, target):
                continue
            unknown = fact_subject.identity is None or target.identity is None
            reason = "unknown_subject" if unknown else "cross_subject"
            found.append(GuardEvent(op.op, op.fact, t, fact_subject.key, target.key, reason))
        if not found:
            out.append(op)
            continue
        events += found
        why = "subject unknown, " if all(e.reason == "unknown_subject" for e in found) else ""
        out.append(Operation("ADD", op.fact, (), facts[op.fact].text, f"guard: {why}was {op.op}"))
    return out, events


async def reconcile(
    llm: LLMClient,
    prompts: PromptLibrary,
    *,
    facts: list[Fact],
    related: list[Memory],
    lang: str,
    speakers: Speakers,
    use_guard: bool = True,
    stored_subjects: dict[int, str] | None = None,
    label: str = "",
    max_tokens: int = 768,
    temperature: float = 0.0,
    repeat: int = 0,
) -> Reconciliation:
    """Decide operations for ``facts`` against ``related`` memories. Never raises for a bad
    answer or a provider error: those fall back to ADD-all with the reason (R3)."""
    if not facts:
        return Reconciliation([], [])
    if not related:
        added = add_all(facts)
        return Reconciliation(added, added)
    short_ids = {f"m{i + 1}": m.id for i, m in enumerate(related)}
    by_id = {m.id: m for m in related}
    prompt = prompts.render(
        "reconcile",
        lang,
        {
            "facts": [{"index": i, "text": f.text, "owner": f.owner} for i, f in enumerate(facts)],
            "memories": [{"id": s, "text": by_id[d].text} for s, d in short_ids.items()],
            "user_name": speakers.user_name,
            "named_speakers": list(speakers.named),
            "lang": lang,
        },
    )
    request = Request.of(
        prompt.messages(),
        max_tokens=max_tokens,
        temperature=temperature,
        repeat=repeat,
        json_schema=reconcile_schema(len(facts), list(short_ids)),
        schema_name="memory_reconcile",
    )
    result = Reconciliation([], [], prompt=prompt, short_ids=short_ids)
    try:
        completion = await llm.complete(
            request, label=f"{label} reconcile".strip(), stage="reconcile"
        )
    except ProviderError as exc:
        result.applied = add_all(facts, "fallback")
        result.fallback = f"provider error: {exc}"
        return result
    result.completion = completion
    reason = completion.parse_error
    ops: list[Operation] | None = None
    if completion.parsed is not None:
        try:
            answer = ReconcileAnswer.model_validate(completion.parsed)
        except ValidationError as exc:
            first = exc.errors()[0]
            reason = f"wrong schema: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        else:
            ops, reason = interpret(answer, facts, short_ids, result.truncated)
    if ops is None:
        result.parse_error = reason
        result.fallback = f"unusable answer: {reason}"
        result.applied = add_all(facts, "fallback")
        return result
    result.raw = ops
    if use_guard:
        ops, result.guard_events = guard(ops, facts, by_id, speakers, stored_subjects)
    result.applied = one_change_each(ops, {d: s for s, d in short_ids.items()})
    return result


def one_change_each(ops: list[Operation], names: dict[int, str]) -> list[Operation]:
    """A memory is changed by at most one operation of an answer: the first, in fact
    order, that names it. A later operation loses the targets an earlier one took; left
    with none, an UPDATE or SUPERSEDE becomes an ADD (its text is new) and a DELETE does
    nothing, with a note naming the fact that took them. Without this, two UPDATEs that
    cross (fact 0 ``UPDATE [m1, m2]``, fact 1 ``UPDATE [m2, m1]``) end with both memories
    deleted as merged and neither new text kept. ``names`` gives the answer's short ids."""
    taken: dict[int, int] = {}
    out: list[Operation] = []
    for op in ops:
        lost = [t for t in op.targets if t in taken] if op.op in CHANGING_OPS else []
        kept = tuple(t for t in op.targets if t not in taken)
        taken.update((t, op.fact) for t in kept if op.op in CHANGING_OPS)
        if not lost:
            out.append(op)
            continue
        why = (
            f"{', '.join(names.get(t, str(t)) for t in lost)} already changed by "
            f"fact {taken[lost[0]]}"
        )
        note = f"{op.note}; {why}" if op.note else why
        if kept:
            out.append(replace(op, targets=kept, note=note))
        else:
            out.append(
                Operation("NONE" if op.op == "DELETE" else "ADD", op.fact, (), op.text, note)
            )
    return out

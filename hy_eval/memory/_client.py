"""``MemoryClient``: the memory pipeline behind one small API.

``add`` makes at most two sequential model round trips (extraction, then reconcile; the
second is skipped when no related memory exists) and applies everything it writes in one
store transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hy_eval.conversation import (
    ChatMessage,
    MessageError,
    conversation_language,
    normalise_messages,
    parse_l1_raw,
    render_conversation,
    resolve_user_name,
)
from hy_eval.llm import LLMClient, Usage
from hy_eval.memory._extract import Extraction, extract, history_text
from hy_eval.memory._prompts import PromptLibrary
from hy_eval.memory._reconcile import Operation, Reconciliation, reconcile
from hy_eval.memory._store import Memory, MemoryStore
from hy_eval.memory._subjects import Speakers, subject_of


@dataclass
class AddResult:
    """Everything one ``add`` did, for callers and for the harness's case records."""

    user_id: str
    lang: str
    rendered: str
    extraction: Extraction
    reconciliation: Reconciliation
    #: Database ids written per applied operation, in order.
    written: list[dict[str, Any]] = field(default_factory=list)
    profile_before: dict[str, Any] = field(default_factory=dict)
    profile_after: dict[str, Any] = field(default_factory=dict)
    l1_raw_id: int | None = None
    warnings: list[str] = field(default_factory=list)
    round_trips: int = 0
    #: The people of the conversation, with declared aliases (subjects are read with them).
    speakers: Speakers = field(default_factory=Speakers)

    @property
    def facts(self) -> list[dict[str, str]]:
        return [{"text": f.text, "owner": f.owner} for f in self.extraction.facts]

    @property
    def usage(self) -> Usage:
        return self.extraction.usage + self.reconciliation.usage

    @property
    def truncated(self) -> dict[str, int]:
        """What was cut from the answers to the schemas' limits, by kind."""
        return {**self.extraction.truncated, **self.reconciliation.truncated}

    @property
    def profile_changes(self) -> dict[str, tuple[Any, Any]]:
        keys = set(self.profile_before) | set(self.profile_after)
        return {
            k: (self.profile_before.get(k), self.profile_after.get(k))
            for k in sorted(keys)
            if self.profile_before.get(k) != self.profile_after.get(k)
        }


class MemoryClient:
    def __init__(
        self,
        llm: LLMClient,
        store: MemoryStore | None = None,
        prompts: PromptLibrary | None = None,
        *,
        guard: bool = True,
        history_limit: int = 500,
        history_turns: int = 3,
        top_k: int = 5,
        temperature: float = 0.0,
    ) -> None:
        self.llm = llm
        self.store = store or MemoryStore()
        self.prompts = prompts or PromptLibrary()
        self.guard = guard
        self.history_limit = history_limit
        self.history_turns = history_turns
        self.top_k = top_k
        self.temperature = temperature

    async def add(
        self,
        messages: Any,
        user_id: str,
        session_id: str | None = None,
        *,
        system: Any = None,
        label: str = "",
        repeat: int = 0,
        aliases: Mapping[str, Iterable[str]] | None = None,
    ) -> AddResult:
        """Extract facts from ``messages``, reconcile them and store everything.

        ``aliases`` maps a speaker's name to other forms of it (``{"王伟": ["Wang Wei"]}``):
        a fact naming an alias is about that speaker, for the guard and the stored subject
        (A8). They do not change what the model is asked.
        ``repeat`` separates repeated samples of the same conversation in the answer cache.
        Raises ``MessageError`` for bad input (an alias of someone who is not a speaker
        too) and ``ProviderError``/``CacheMiss`` when the extraction call fails; nothing is
        written in either case (M7).
        """
        msgs: list[ChatMessage] = normalise_messages(messages, system=system)
        return await self.add_normalised(
            msgs, user_id, session_id, label=label, repeat=repeat, aliases=aliases
        )

    async def add_normalised(
        self,
        msgs: list[ChatMessage],
        user_id: str,
        session_id: str | None = None,
        *,
        label: str = "",
        repeat: int = 0,
        aliases: Mapping[str, Iterable[str]] | None = None,
    ) -> AddResult:
        """:meth:`add` for messages that ``normalise_messages`` already gave (a suite's
        case, normalised once when it was loaded): the same steps, without normalising
        again. Raises ``MessageError`` for a bad alias."""
        user = resolve_user_name(msgs)
        named = [m.name for m in msgs if m.is_named_human and m.name]
        try:
            speakers = Speakers.of(user.name, named, aliases)
        except ValueError as exc:
            raise MessageError(None, f"aliases: {exc}") from None
        lang = conversation_language(msgs)
        rendered = render_conversation(msgs, lang=lang)
        warnings = [
            f"user name {c!r} differs from {user.name!r}; the first is used" for c in user.conflicts
        ]
        earlier: list[ChatMessage] = []
        for text in self.store.l1_raw(user_id, limit=self.history_turns):
            earlier.extend(parse_l1_raw(text))
        extraction = await extract(
            self.llm,
            self.prompts,
            conversation=rendered,
            history=history_text(earlier, self.history_limit),
            lang=lang,
            user_name=user.name,
            named_speakers=list(speakers.named),
            label=label,
            temperature=self.temperature,
            repeat=repeat,
        )
        related: dict[int, Memory] = {}
        for fact in extraction.facts:
            for mem in self.store.search(fact.text, user_id, self.top_k):
                related.setdefault(mem.id, mem)
        shown = list(related.values())[: self.top_k * 2]
        recon = await reconcile(
            self.llm,
            self.prompts,
            facts=extraction.facts,
            related=shown,
            lang=lang,
            speakers=speakers,
            use_guard=self.guard,
            stored_subjects=self.store.subjects([m.id for m in shown]),
            label=label,
            temperature=self.temperature,
            repeat=repeat,
        )
        result = AddResult(
            user_id=user_id,
            lang=lang,
            rendered=rendered,
            extraction=extraction,
            reconciliation=recon,
            warnings=warnings,
            round_trips=1 + (recon.prompt is not None),
            speakers=speakers,
        )
        self._apply(result, user_id, session_id or uuid.uuid4().hex[:12])
        return result

    def _apply(self, result: AddResult, user_id: str, session_id: str) -> None:
        """All writes of one ``add``, in one transaction."""
        store = self.store
        facts = result.extraction.facts
        with store.transaction():
            result.profile_before = store.profile(user_id)
            for op in result.reconciliation.applied:
                result.written.append(
                    self._apply_op(op, facts[op.fact].owner, user_id, result.speakers)
                )
            merged = {**result.profile_before, **result.extraction.basic_info}
            if merged != result.profile_before:
                store.write_profile(user_id, merged)
            result.profile_after = merged
            result.l1_raw_id = store.add_l1_raw(user_id, result.rendered, session_id)

    def _apply_op(
        self, op: Operation, owner: str, user_id: str, speakers: Speakers
    ) -> dict[str, Any]:
        store = self.store
        record: dict[str, Any] = {"op": op.op, "fact": op.fact, "targets": list(op.targets)}
        # The memory keeps the subject read from its text now, while the speakers are known.
        subject = subject_of(op.text, speakers).key
        # Each target once, whatever the operation says: an UPDATE deletes as merged only
        # ids it names besides the one it updates.
        targets = list(dict.fromkeys(op.targets))
        if op.op == "ADD":
            record["id"] = store.insert(user_id, op.text, owner, op.note, subject)
        elif op.op == "UPDATE":
            store.update(targets[0], op.text, op.note, subject)
            for extra in targets[1:]:
                store.delete(extra, "merged by UPDATE")
        elif op.op == "DELETE":
            for target in targets:
                store.delete(target, op.note)
        elif op.op == "SUPERSEDE":
            new_id = store.insert(user_id, op.text, owner, op.note, subject)
            record["id"] = new_id
            for target in targets:
                store.supersede(target, new_id, op.note)
        return record

    # -- reading -----------------------------------------------------------------------

    def search(self, query: str, user_id: str, limit: int = 5) -> list[Memory]:
        return self.store.search(query, user_id, limit)

    def get_all(self, user_id: str) -> list[Memory]:
        return self.store.get_all(user_id)

    def history(self, memory_id: int) -> list[dict[str, Any]]:
        return self.store.history(memory_id)

    def profile(self, user_id: str) -> dict[str, Any]:
        return self.store.profile(user_id)

"""``MemoryClient``: the memory pipeline behind one small API.

``add`` makes at most two sequential model round trips (extraction, then reconcile; the
second is skipped when no related memory exists) and applies everything it writes in one
store transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from hy_eval.conversation import (
    ChatMessage,
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
from hy_eval.memory._subjects import Speakers


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

    @property
    def facts(self) -> list[dict[str, str]]:
        return [{"text": f.text, "owner": f.owner} for f in self.extraction.facts]

    @property
    def usage(self) -> Usage:
        return self.extraction.usage + self.reconciliation.usage

    @property
    def truncated(self) -> dict[str, int]:
        """What was cut from the answers to the schemas' limits (issue 14), by kind."""
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
    ) -> AddResult:
        """Extract facts from ``messages``, reconcile them and store everything.

        ``repeat`` separates repeated samples of the same conversation in the answer cache.
        Raises ``MessageError`` for bad input and ``ProviderError``/``CacheMiss`` when the
        extraction call fails; nothing is written in either case (M7).
        """
        msgs: list[ChatMessage] = normalise_messages(messages, system=system)
        user = resolve_user_name(msgs)
        named = [m.name for m in msgs if m.is_named_human and m.name]
        speakers = Speakers.of(user.name, named)
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
        recon = await reconcile(
            self.llm,
            self.prompts,
            facts=extraction.facts,
            related=list(related.values())[: self.top_k * 2],
            lang=lang,
            speakers=speakers,
            use_guard=self.guard,
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
                result.written.append(self._apply_op(op, facts[op.fact].owner, user_id))
            merged = {**result.profile_before, **result.extraction.basic_info}
            if merged != result.profile_before:
                store.write_profile(user_id, merged)
            result.profile_after = merged
            result.l1_raw_id = store.add_l1_raw(user_id, result.rendered, session_id)

    def _apply_op(self, op: Operation, owner: str, user_id: str) -> dict[str, Any]:
        store = self.store
        record: dict[str, Any] = {"op": op.op, "fact": op.fact, "targets": list(op.targets)}
        # Each target once, whatever the operation says: an UPDATE deletes as merged only
        # ids it names besides the one it updates (issue 14).
        targets = list(dict.fromkeys(op.targets))
        if op.op == "ADD":
            record["id"] = store.insert(user_id, op.text, owner, op.note)
        elif op.op == "UPDATE":
            store.update(targets[0], op.text, op.note)
            for extra in targets[1:]:
                store.delete(extra, "merged by UPDATE")
        elif op.op == "DELETE":
            for target in targets:
                store.delete(target, op.note)
        elif op.op == "SUPERSEDE":
            new_id = store.insert(user_id, op.text, owner, op.note)
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

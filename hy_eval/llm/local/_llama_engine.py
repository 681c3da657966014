"""Continuous batching for the embedded model's process: several greedy chat completions
decoded together in one llama.cpp context, each request's fixed prompt prefix evaluated
once and copied.

One context holds ``slots`` request sequences and ``prefixes`` prefix sequences, each in
a KV-cache stream of its own (``kv_unified = False``). A decode step sends one token of
every running request in one ``llama_batch`` (a sequence id each), so the weights are read
once per step for all of them. With a stream per sequence, a sequence's attention covers
only its own cells, and its numbers do not depend on what it is batched with: on this
CPU build the batched tokens equal those of one-at-a-time decoding
(``benchmarks/bench_decoding.py``; ``tests/llm/test_llama_engine.py``).

On 2 AVX2 cores batching did not pay: a step there is bound by arithmetic (the Q4_1 dot
products, each sequence's attention over its own cache), not by reading the weights, so a
batched step costs about the sum of its sequences' (``benchmarks/README.md``). The local
provider therefore batches only when ``--concurrency`` asks for more requests than it
has model processes.

Prefix sharing: a request's system message (its stage's instructions and examples) is
evaluated once into a prefix sequence; each later request with the same leading tokens
has that stream copied into its own (``llama_memory_seq_cp``, a buffer copy between
streams) and evaluates only the rest of its prompt.

Only what the local provider sends is batched: greedy decoding (temperature 0), no
penalties, an optional JSON schema. The answer is built as llama-cpp-python's
``create_chat_completion`` builds it (the GGUF's chat template, the same stop rules, the
same token counts), so the engine and the library's path give the same text for the same
tokens.

Imported by path from ``_llama_worker.py`` (a script that imports nothing of hy_eval)
and as ``hy_eval.llm.local._llama_engine`` by tests and benchmarks.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

_T = TypeVar("_T")

#: A prefix is copied only when at least this many leading tokens are shared: below it,
#: evaluating the tokens costs less than copying a stream.
MIN_SHARED = 64

#: Protocol request fields the engine can serve; anything else takes the library's path.
BATCHABLE_KEYS = frozenset({"id", "messages", "temperature", "max_tokens", "seed", "schema"})


def batchable(request: dict[str, Any]) -> bool:
    """Whether the engine serves ``request``: greedy, and nothing it does not know."""
    return request.get("temperature") == 0 and set(request) <= BATCHABLE_KEYS


class SchemaError(ValueError):
    """A JSON schema that cannot be made into a grammar llama.cpp compiles (a request's
    own error, in one line: the model process goes on)."""


def schema_grammar(llama_cpp: Any, vocab: Any, schema_text: str) -> Any:
    """The ``LlamaGrammar`` of ``schema_text`` (JSON), as llama-cpp-python builds it for
    ``response_format`` ``{"type": "json_object", "schema"}``, after compiling it once.

    Raises :class:`SchemaError` when the library's converter refuses the schema (the
    library's chat path would quietly fall back to any JSON) or when llama.cpp's grammar
    parser refuses the grammar (over its repetition limit, say ``maxItems: 5000``): the
    library would then sample with no grammar, or crash when sampling with a temperature.
    llama.cpp prints the whole grammar (100 KB and more) on stderr when it refuses one;
    that is kept off stderr and only its first line is the error's reason."""
    from llama_cpp import llama_grammar

    try:
        grammar = llama_grammar.LlamaGrammar.from_json_schema(schema_text, verbose=False)
    except Exception as exc:  # the converter's own words: AssertionError, KeyError, ...
        raise SchemaError(f"the JSON schema cannot be made into a grammar: {_line(exc)}") from None
    sampler, said = _quiet_stderr(
        lambda: llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
    )
    if not sampler:
        found = re.search(r"error parsing grammar: ([^\n]*)", said)
        reason = found.group(1) if found else "no reason given"
        raise SchemaError(f"the JSON schema's grammar is refused by llama.cpp: {_line(reason)}")
    llama_cpp.llama_sampler_free(sampler)
    return grammar


def _line(text: object, limit: int = 240) -> str:
    """``text`` on one line of at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _quiet_stderr(call: Callable[[], _T]) -> tuple[_T, str]:
    """``call()`` with file descriptor 2 pointed at a temporary file (native code writes
    there, not through Python), and the first 4 KB it wrote there."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            result = call()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        caught.seek(0)
        said = caught.read(4096).decode("utf-8", "replace")
    return result, said


class GreedySampler:
    """Greedy choice from one output row of the last decode, without a grammar."""

    def __init__(self, llama_cpp: Any, ctx: Any, n_vocab: int) -> None:
        import numpy as np

        self._np = np
        self._lc = llama_cpp
        self._ctx = ctx
        self._n_vocab = n_vocab

    def sample(self, ridx: int) -> int:
        ptr = self._lc.llama_get_logits_ith(self._ctx, ridx)
        return int(self._np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).argmax())

    def close(self) -> None:
        return None


@dataclass
class Job:
    """One request from the time it is read until its answer is written."""

    id: Any
    tokens: list[int]
    max_tokens: int
    #: Leading tokens of the system message: the shareable prefix (empty: none).
    prefix: list[int]
    grammar: Any = None
    sampler: Any = None
    seq: int = -1
    #: Position of the next token to evaluate.
    pos: int = 0
    last: int = -1
    completion: list[int] = field(default_factory=list)
    text: bytes = b""
    multibyte_fix: int = 0
    checked: int = 0


@dataclass
class _Prefix:
    seq: int
    tokens: list[int]
    used: int = 0


class BatchEngine:
    """The batched decoder for one loaded model (``holder``: a ``llama_cpp.Llama`` that
    gives the weights, tokenizer, chat template and context settings; its own context is
    not used). Not thread-safe: one thread calls everything (llama.cpp's OpenMP build keeps
    a thread team per calling thread)."""

    def __init__(
        self, llama_cpp: Any, holder: Any, *, n_ctx: int, slots: int, prefixes: int = 4
    ) -> None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.lc = llama_cpp
        self.holder = holder
        self.n_ctx = n_ctx
        self.slots = slots
        self.n_vocab = int(holder._n_vocab)
        self.vocab = holder._model.vocab
        eos, bos = holder.token_eos(), holder.token_bos()
        text = holder._model.token_get_text
        self.formatter = Jinja2ChatFormatter(
            template=holder.metadata["tokenizer.chat_template"],
            eos_token=text(eos) if eos != -1 else "",
            bos_token=text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        params = type(holder.context_params).from_buffer_copy(holder.context_params)
        params.n_seq_max = slots + prefixes
        params.n_ctx = n_ctx * params.n_seq_max  # each stream holds a whole request
        params.kv_unified = False
        self.n_batch = int(params.n_batch)
        self.ctx = llama_cpp.llama_init_from_model(holder._model.model, params)
        if not self.ctx:
            raise RuntimeError("llama_init_from_model failed for the batched context")
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(max(self.n_batch, slots), 0, 1)
        self.free = list(range(slots))
        self.running: list[Job] = []
        self._prefixes = [_Prefix(slots + i, []) for i in range(prefixes)]
        self._clock = 0
        self._grammars: dict[str, Any] = {}
        #: Counters for benchmarks: prompt tokens evaluated, and those a copy saved.
        self.evaluated = 0
        self.shared = 0

    # -- requests -------------------------------------------------------------------------

    def prepare(self, request: dict[str, Any]) -> Job:
        """A job for a protocol request: its prompt tokens, token budget and grammar.
        Raises ``ValueError`` for a prompt the context cannot hold (as the library does)."""
        messages = request["messages"]
        result = self.formatter(messages=messages)
        tokens = self._tokenize(result.prompt)
        if len(tokens) >= self.n_ctx:
            raise ValueError(
                f"Requested tokens ({len(tokens)}) exceed context window of {self.n_ctx}"
            )
        max_tokens = request.get("max_tokens") or 0
        if max_tokens <= 0 or max_tokens + len(tokens) >= self.n_ctx:
            max_tokens = self.n_ctx - len(tokens)
        prefix: list[int] = []
        if messages and messages[0].get("role") == "system" and messages[0].get("content"):
            cut = result.prompt.find(messages[0]["content"])
            if cut >= 0:
                head = self._tokenize(result.prompt[: cut + len(messages[0]["content"])])
                prefix = tokens[: _common(head, tokens)]
        job = Job(request.get("id"), tokens, max_tokens, prefix)
        schema = request.get("schema")
        if schema is not None:
            job.grammar = self._grammar(schema)
        return job

    def _tokenize(self, text: str) -> list[int]:
        # added_special: the template writes the special tokens itself (no BOS added).
        return list(self.holder.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _grammar(self, schema: Any) -> Any:
        # Keyed by the text as sent: the properties' order is the grammar's order.
        key = json.dumps(schema)
        if key not in self._grammars:
            # As the library builds it for response_format {"type": "json_object", schema},
            # checked to compile (SchemaError, the request's error, if it does not).
            self._grammars[key] = schema_grammar(self.lc, self.vocab, key)
        return self._grammars[key]

    # -- admission ------------------------------------------------------------------------

    def admit(self, job: Job) -> dict[str, Any] | None:
        """Start ``job`` in a free slot: its prompt evaluated (the shared prefix copied in)
        and its first token chosen. Returns its reply if that already finished it."""
        job.seq = self.free.pop()
        lc = self.lc
        lc.llama_memory_seq_rm(self.memory, job.seq, -1, -1)
        start = self._copy_prefix(job)
        self._evaluate(job.tokens[start:], job.seq, start)
        job.pos = len(job.tokens)
        if job.grammar is not None:
            job.sampler = GreedyGrammar(lc, self.ctx, self.vocab, self.n_vocab, job.grammar)
        else:
            job.sampler = GreedySampler(lc, self.ctx, self.n_vocab)
        self.running.append(job)
        return self._take(job, job.sampler.sample(-1))

    def _copy_prefix(self, job: Job) -> int:
        """Copy the longest cached prefix of ``job``'s prompt into its sequence (evaluating
        its system part into a prefix sequence first when no cached one covers it).
        Returns the number of leading tokens now in place."""
        best, shared = None, 0
        for entry in self._prefixes:
            n = _common(entry.tokens, job.tokens)
            if n > shared:
                best, shared = entry, n
        if len(job.prefix) >= MIN_SHARED and shared < len(job.prefix):
            best = min(self._prefixes, key=lambda e: e.used)  # least recently used
            self.lc.llama_memory_seq_rm(self.memory, best.seq, -1, -1)
            best.tokens = []
            self._evaluate(job.prefix, best.seq, 0, logits=False)
            best.tokens = list(job.prefix)
            shared = len(job.prefix)
        # At least the last prompt token is evaluated here: its logits choose the first.
        shared = min(shared, len(job.tokens) - 1)
        if best is None or shared < MIN_SHARED:
            return 0
        self._clock += 1
        best.used = self._clock
        self.lc.llama_memory_seq_cp(self.memory, best.seq, job.seq, -1, -1)
        self.lc.llama_memory_seq_rm(self.memory, job.seq, shared, -1)
        self.shared += shared
        return shared

    def _evaluate(self, tokens: list[int], seq: int, start: int, logits: bool = True) -> None:
        """Evaluate ``tokens`` at positions ``start``.. of ``seq`` in chunks of the batch
        size; logits for the last token only (when ``logits``)."""
        for at in range(0, len(tokens), self.n_batch):
            chunk = tokens[at : at + self.n_batch]
            end = at + len(chunk) == len(tokens)
            self._decode(
                [
                    (t, start + at + i, seq, logits and end and i == len(chunk) - 1)
                    for i, t in enumerate(chunk)
                ]
            )
        self.evaluated += len(tokens)

    def _decode(self, items: list[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` of (token, position, sequence, wants logits) items."""
        b = self.batch
        b.n_tokens = len(items)
        for i, (token, pos, seq, out) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i] = token, pos, 1
            b.seq_id[i][0], b.logits[i] = seq, out
        code = self.lc.llama_decode(self.ctx, b)
        if code != 0:
            raise RuntimeError(f"llama_decode failed ({code})")

    # -- decoding -------------------------------------------------------------------------

    def step(self) -> list[dict[str, Any]]:
        """One decode step of every running job; the replies of those it finished."""
        jobs = list(self.running)
        self._decode([(j.last, j.pos, j.seq, True) for j in jobs])
        replies = []
        for i, job in enumerate(jobs):
            job.pos += 1
            reply = self._take(job, job.sampler.sample(i))
            if reply is not None:
                replies.append(reply)
        return replies

    def _take(self, job: Job, token: int) -> dict[str, Any] | None:
        """Account for ``token`` chosen for ``job``, as llama-cpp-python's completion loop
        does: end of generation, held-back partial UTF-8, the stop string, the budget.
        Returns the reply when the job is finished (its slot is free again)."""
        if self.lc.llama_vocab_is_eog(self.vocab, token):
            return self._finish(job, job.text, "stop")
        job.completion.append(token)
        job.last = token
        job.text += self._piece(token)
        tail = job.text[-3:]
        for k, char in enumerate(tail):
            k = 3 - k  # the library's reading (it assumes three bytes)
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    job.multibyte_fix = num - k
        if job.multibyte_fix > 0:
            job.multibyte_fix -= 1
            return None
        stop = self.formatter.eos_token.encode("utf-8")
        if stop:
            found = job.text.find(stop, max(0, job.checked - len(stop) + 1))
            job.checked = len(job.text)
            if found >= 0:
                return self._finish(job, job.text[:found], "stop")
        if len(job.completion) >= job.max_tokens:
            return self._finish(job, job.text, "length")
        return None

    def _piece(self, token: int) -> bytes:
        # The library's detokenize joins the pieces of the tokens (no BOS in an answer).
        return bytes(self.holder._model.detokenize([token], special=False))

    def _finish(self, job: Job, text: bytes, reason: str) -> dict[str, Any]:
        job.sampler.close()
        self.running.remove(job)
        self.lc.llama_memory_seq_rm(self.memory, job.seq, -1, -1)
        self.free.append(job.seq)
        return {
            "id": job.id,
            "text": text.decode("utf-8", errors="ignore"),
            "finish_reason": reason,
            "prompt_tokens": len(job.tokens),
            "completion_tokens": len(job.completion),
        }

    def close(self) -> None:
        for job in self.running:
            job.sampler.close()
        self.running.clear()
        if self.batch is not None:
            self.lc.llama_batch_free(self.batch)
            self.batch = None
        if self.ctx:
            self.lc.llama_free(self.ctx)
            self.ctx = None


def _common(a: list[int], b: list[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class GreedyGrammar:
    """One grammar's state for one greedy generation, checked on the argmax token first.

    Equivalent to llama.cpp's chain "grammar, then greedy": the argmax over the tokens the
    grammar allows is the overall argmax whenever the grammar allows that token (ties go
    to the lowest id in both). Only when it is refused is the whole vocabulary masked."""

    def __init__(self, llama_cpp: Any, ctx: Any, vocab: Any, n_vocab: int, grammar: Any) -> None:
        import numpy as np

        self._np = np
        self._lc = llama_cpp
        self._ctx = ctx
        self._n_vocab = n = n_vocab
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._sampler:  # schema_grammar checks first; sampling without one is wrong
            raise SchemaError("the JSON schema's grammar is refused by llama.cpp")
        self._one = (llama_cpp.llama_token_data * 1)()
        self._all = (llama_cpp.llama_token_data * n)()
        self._all_view = np.ctypeslib.as_array(self._all)
        self._ids = np.arange(n, dtype=self._all_view["id"].dtype)
        self.full_masks = 0
        self.tokens = 0

    def _apply(self, data: Any, size: int) -> None:
        arr = self._lc.llama_token_data_array(data=data, size=size, selected=-1, sorted=False)
        self._lc.llama_sampler_apply(self._sampler, ctypes.byref(arr))

    def sample(self, ridx: int) -> int:
        np = self._np
        ptr = self._lc.llama_get_logits_ith(self._ctx, ridx)
        logits = np.ctypeslib.as_array(ptr, shape=(self._n_vocab,))
        token = int(logits.argmax())
        self._one[0].id = token
        self._one[0].logit = float(logits[token])
        self._one[0].p = 0.0
        self._apply(self._one, 1)
        if self._one[0].logit == float("-inf"):
            self.full_masks += 1
            view = self._all_view
            view["id"] = self._ids
            view["logit"] = logits
            view["p"] = 0.0
            self._apply(self._all, self._n_vocab)
            token = int(view["id"][int(view["logit"].argmax())])
        self._lc.llama_sampler_accept(self._sampler, token)
        self.tokens += 1
        return token

    def close(self) -> None:
        if self._sampler is not None:
            self._lc.llama_sampler_free(self._sampler)
            self._sampler = None

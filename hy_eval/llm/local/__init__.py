"""The embedded model: the local provider (``_local``), which starts model processes that
run ``_llama_worker.py`` by path, and the batched llama.cpp engine that script drives
(``_llama_engine``). The worker script must stay beside the engine: run as a script it
imports the engine as the file next to it. Above ``core`` and ``cache``."""

from hy_eval.llm.local._local import LocalProvider, split_concurrency

__all__ = ["LocalProvider", "split_concurrency"]

"""llama-cpp-python's own OpenAI-compatible server, started the way a user starts it
(``python -m llama_cpp.server ...``, same arguments), with one change: models load
without llama.cpp's extra buffer types.

With extra buffer types the CPU backend repacks weights for its AMX kernels, which
segfault in decode on some Xeons; the harness's own model process loads with
``use_extra_bufts = False`` (``hy_eval/llm/local/_llama_worker.py``, ``plain_class``). The
server builds its ``Llama`` from ``llama_model_default_params()``, so that function is
wrapped for the whole process before the server's ``main`` runs. Used by
``tests/llm/test_real_server.py``.

Usage: ``python tests/llm/llama_server.py --model PATH --model_alias NAME --port P``.
"""

from __future__ import annotations

from typing import Any


def without_extra_bufts(low: Any) -> None:
    """Make every model ``low`` (``llama_cpp.llama_cpp``) loads skip extra buffer types."""
    default = low.llama_model_default_params

    def plain_params() -> Any:
        params = default()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = plain_params


def main() -> None:
    import llama_cpp.llama_cpp as low
    from llama_cpp.server.__main__ import main as server_main

    without_extra_bufts(low)
    server_main()


if __name__ == "__main__":
    main()

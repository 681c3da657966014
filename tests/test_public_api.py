"""Each public package re-exports exactly the names in its ``__all__`` (STYLE.md)."""

import importlib

import pytest

PACKAGES = [
    "hy_eval.conversation",
    "hy_eval.llm",
    "hy_eval.memory",
    "hy_eval.harness",
    *(
        f"hy_eval.harness.{floor}"
        for floor in ("text", "runlog", "datasets", "scoring", "analysis", "report", "gate", "run")
    ),
    *(f"hy_eval.llm.{room}" for room in ("core", "cache", "local", "providers", "batch", "serve")),
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name):
    module = importlib.import_module(name)
    public = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and not isinstance(v, type(importlib))  # submodules aside
    }
    assert set(module.__all__) == public
    assert len(module.__all__) == len(set(module.__all__))


def test_package_imports_without_vendor_sdks_loaded():
    import subprocess
    import sys

    code = (
        "import sys, hy_eval.llm, hy_eval.memory, hy_eval.harness, hy_eval.cli;"
        "print(sorted(m for m in ('openai', 'anthropic', 'llama_cpp', 'matplotlib', 'pandas')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

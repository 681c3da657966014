import pytest

#: The files that take longest (benchmarks/README.md "Test time"), run first, longest
#: first. The test command's two workers take whole files in collection order (xdist's
#: ``--dist loadfile``, pyproject.toml), so a long file taken last would leave one worker
#: running it alone at the end; started first, the short files even the two out. Every
#: other file keeps its place. The systems' workers come first for their virtualenvs,
#: which a clean clone makes on first use (minutes), while the other worker goes on.
LONGEST_FIRST = (
    "tests/harness/systems/test_hy_memory_worker.py",
    "tests/test_docs_commands.py",
    "tests/harness/systems/test_mem0_worker.py",
    "tests/llm/test_local.py",
    "tests/llm/test_llama_engine.py",
    "tests/llm/test_real_server.py",
    "tests/harness/datasets/test_perturb.py",
    "tests/harness/analysis/test_error_rates.py",
    "tests/harness/report/test_pages_full_size.py",
    "tests/harness/report/test_pages_browser.py",
    "tests/harness/analysis/test_datastats.py",
    "tests/harness/systems/test_external.py",
)


def pytest_collection_modifyitems(items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory):
    """The hostile-input corpus's run, shared by tests/reliability/test_hostile.py
    and the browser tests of the report pages: it takes the longest to make."""
    from .reliability.test_hostile import make_hostile_run

    return make_hostile_run(tmp_path_factory)

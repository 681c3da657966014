import pytest


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory):
    """The hostile-input corpus's run (issue 14), shared by tests/reliability/test_hostile.py
    and the browser tests of the report pages (issue 21): it takes the longest to make."""
    from .reliability.test_hostile import make_hostile_run

    return make_hostile_run(tmp_path_factory)

import pytest


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory):
    """The hostile-input corpus's run, shared by tests/reliability/test_hostile.py
    and the browser tests of the report pages: it takes the longest to make."""
    from .reliability.test_hostile import make_hostile_run

    return make_hostile_run(tmp_path_factory)

"""A case record is reused only by a run that would compute the same record (E6, issue:
a run of another system took this pipeline's records under its own name). Property:
every ``RunConfig`` field is either in the record identity (directly, or through the
model's, the judge's, the price's part or the record's key) or listed with the reason it
cannot change a record, and changing any identity field changes the identity the runner
computes. A new field in neither list fails here until it is placed."""

import pytest

from hy_eval.harness import RunConfig, Runner
from hy_eval.harness.run import _reuse
from hy_eval.harness.run._runner import Runner as RunnerClass
from tests.harness.run.test_run import write_suite

PLACED = (
    set(_reuse.RECORD_SETTINGS)
    | set(_reuse.THROUGH_MODEL)
    | set(_reuse.THROUGH_JUDGE)
    | set(_reuse.THROUGH_PRICE)
    | set(_reuse.THROUGH_KEY)
)

ANTHROPIC = "http://127.0.0.1:9/anthropic"
LOCAL = {"provider": "local", "model": None, "base_url": None, "structured": None}

#: For each field of the identity: (settings of the base run, settings of the changed
#: run). The base is an openai-compatible endpoint that is never called.
CHANGES: dict[str, tuple[dict, dict]] = {
    "system": ({}, {"system": "mem0"}),
    "variant": ({}, {"variant": "no_examples"}),
    "guard": ({}, {"guard": False}),
    "temperature": ({}, {"temperature": 0.7}),
    "structured": ({}, {"structured": "tools"}),
    "matcher": ({}, {"matcher": "fuzzy"}),
    "perturb": ({}, {"perturb": "rename"}),
    "perturb_seed": ({"perturb": "rename"}, {"perturb": "rename", "perturb_seed": 1}),
    "provider": ({}, {"provider": "anthropic", "structured": None}),
    "model": ({}, {"model": "scripted-2"}),
    "base_url": ({}, {"base_url": "http://127.0.0.1:9/v2"}),
    "context": (LOCAL, {**LOCAL, "context": 4096}),
    "judge_provider": (
        {"matcher": "judge"},
        {"matcher": "judge", "judge_provider": "anthropic", "judge_base_url": ANTHROPIC},
    ),
    "judge_model": ({"matcher": "judge"}, {"matcher": "judge", "judge_model": "judge-2"}),
    "judge_base_url": (
        {"matcher": "judge"},
        {"matcher": "judge", "judge_base_url": "http://127.0.0.1:9/judge"},
    ),
    "judge_variant": ({"matcher": "judge"}, {"matcher": "judge", "judge_variant": "no_examples"}),
    "prices": ({}, {"prices": "PRICES"}),
    # A batch's price is half: a record's cost changes where the model has a price.
    "batch": ({"prices": "PRICES"}, {"prices": "PRICES", "batch": True}),
}


class _Identity(Exception):
    """Raised right after the runner computed its record identity."""


def identity(tmp_path, name, **settings) -> str:
    """The record identity the runner computes for a run with ``settings``."""
    if settings.get("prices") == "PRICES":
        prices = tmp_path / "prices.json"
        prices.write_text('[models."scripted"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n')
        settings["prices"] = str(prices)
    base = dict(
        suite=str(tmp_path / "toy"),
        provider="openai",
        model="scripted",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-dummy",
        structured="json_schema",  # no probe of the endpoint, which is never called
        cache_path=str(tmp_path / "cache.sqlite"),
        out=str(tmp_path / name),
        progress=False,
    )
    runner = Runner(RunConfig(**{**base, **settings}))
    try:
        runner.run()
    except _Identity:
        return runner._identity
    raise AssertionError("the runner went past its identity")


@pytest.fixture
def stop_after_identity(monkeypatch, tmp_path):
    """Runs stop right after ``_open_reuse``: nothing is asked, no system is started."""
    write_suite(tmp_path / "toy", 2)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-dummy")  # a judge of its own reads it

    def stop(self, *args):
        raise _Identity

    monkeypatch.setattr(RunnerClass, "_announce", stop)


def test_every_config_field_is_placed():
    fields = set(RunConfig.model_fields)
    unplaced = fields - PLACED - set(_reuse.NOT_IN_RECORD)
    assert not unplaced, f"RunConfig fields neither in the record identity nor listed: {unplaced}"
    both = PLACED & set(_reuse.NOT_IN_RECORD)
    assert not both, both
    gone = (PLACED | set(_reuse.NOT_IN_RECORD)) - fields
    assert not gone, f"listed but not RunConfig fields: {gone}"
    # Every identity field has a change tested below, except the key's own parts.
    assert set(CHANGES) == PLACED - set(_reuse.THROUGH_KEY)


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_changing_an_identity_field_changes_the_identity(field, tmp_path, stop_after_identity):
    before, after = CHANGES[field]
    first = identity(tmp_path, "a", **before)
    assert identity(tmp_path, "b", **before) == first  # the same settings, the same identity
    assert identity(tmp_path, "c", **after) != first, field


def test_the_key_parts_change_the_key():
    """``suite`` and ``repeats`` reach a record through its key: the case's line as
    written and the repeat index."""
    key = _reuse.case_record_key("identity", '{"id": "t-00"}', 0)
    assert _reuse.case_record_key("identity", '{"id": "t-00"}', 1) != key
    assert _reuse.case_record_key("identity", '{"id": "t-00", "lang": "zh"}', 0) != key


def test_the_code_fingerprint_covers_the_workers_and_their_pins():
    """The worker scripts and their requirement pins decide an external system's records
    (docs/systems.md): both are in the code fingerprint."""
    from pathlib import Path

    import hy_eval

    root = Path(hy_eval.__file__).parent
    workers = root / "harness" / "systems" / "workers"
    scripts = list(workers.glob("*.py"))
    # What a worker's environment is installed from (the hash-pinned lock files; the
    # ``.in`` files and lock.sh only make them).
    pins = list((workers / "requirements").glob("*.txt"))
    assert scripts and pins
    for path in scripts + pins:
        assert path.suffix in _reuse.FINGERPRINTED, path
    with_pins = _reuse.fingerprint_of(root)
    assert str(pins[0].relative_to(root)) in _fingerprinted(root)
    assert with_pins == _reuse.code_fingerprint()


def _fingerprinted(root):
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.suffix in _reuse.FINGERPRINTED]

"""``RunConfig`` (run/_config.py): one place that builds and checks a run's settings."""

import pytest
from pydantic import ValidationError

from hy_eval.harness import RunConfig


@pytest.mark.parametrize(
    "settings",
    [{"limt": 3}, {"limit": True}, {"limit": "3"}, {"guard": "yes"}, {"suite": 7}],
    ids=["a-typo", "a-bool-for-a-count", "text-for-a-count", "text-for-a-switch", "a-number"],
)
def test_a_setting_that_is_not_a_field_of_its_type_is_refused(settings):
    with pytest.raises(ValidationError):
        RunConfig(**settings)


def test_assigning_a_wrong_type_is_refused_too():
    config = RunConfig()
    with pytest.raises(ValidationError):
        config.limit = "all"  # type: ignore[assignment]


def test_the_run_flags_and_the_model_flags_are_checked_once_each():
    assert RunConfig(limit=0).problem() == "--limit must be at least 1 (got 0)"
    assert RunConfig(repeats=2, pass_k=3).problem() == (
        "--pass-k must be between 1 and --repeats (2) (got 3)"
    )
    # A model flag is ModelOptions' check, worded as memory add words it.
    assert RunConfig(timeout=0.0).problem() == "--timeout must be above 0 seconds (got 0.0)"
    assert RunConfig(threads=2, provider="openai").problem() == (
        "--threads applies to the local provider only"
    )
    assert RunConfig().problem() is None


def test_a_resume_takes_the_saved_identity_and_the_settings_left_at_their_default():
    saved = {"suite": "history", "limit": 3, "max_error_rate": 0.7, "timeout": 5.0}
    resumed = RunConfig(timeout=9.0).resumed(saved)
    assert (resumed.suite, resumed.limit, resumed.max_error_rate) == ("history", 3, 0.7)
    assert resumed.timeout == 9.0  # moved off its default on the command line: kept
    with pytest.raises(ValueError, match=r"params\.limit .*\(got True\)"):
        RunConfig().resumed({"limit": True})


def test_batch_flags_are_checked_before_anything_is_made(tmp_path, capsys):
    from hy_eval.cli import main

    assert RunConfig(batch=True, cache_mode="off").problem() == (
        "--batch needs --cache-mode read-write (its answers go to the cache)"
    )
    out = tmp_path / "run"
    flags = ["--provider", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    args = ["--suite", "multi_speaker", *flags, "--batch", "--batch-poll-interval", "0"]
    assert main([*args, "--out", str(out), "--quiet"]) == 2
    assert "--batch-poll-interval must be above 0 (got 0.0)" in capsys.readouterr().err
    assert not out.exists()  # no manifest, no lock: the model was never set up


def test_the_manifest_records_the_settings_as_params_and_a_resume_reads_them_back():
    from hy_eval.harness.runlog import RunParams

    config = RunConfig(limit=3, guard=False, timeout=5.0, api_key="sk-never-written")
    params = RunParams.model_validate(config.params())
    assert (params.limit, params.guard, params.timeout, params.matcher) == (3, False, 5.0, "strict")
    assert "api_key" not in params.saved() and "progress" not in params.saved()
    assert RunConfig().resumed(params.saved()).limit == 3
    with pytest.raises(ValidationError):
        RunParams.model_validate({"limit": True})  # strict, as on the command line


def test_a_resume_names_a_bad_value_short():
    with pytest.raises(ValueError) as err:
        RunConfig().resumed({"suite": ["x" * 10_000]})
    assert len(str(err.value)) < 160 and str(err.value).startswith("params.suite")

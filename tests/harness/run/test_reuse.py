"""Re-runs from the result cache (E6): a finished case record is reused
only when the case, the run's result-defining parameters, the prompts, the model and the
code are all unchanged, and the same records give the same report. Every test counts the
requests that reach the loopback server."""

import json
from collections import Counter

import pytest

from hy_eval.harness import Runner, load_suite
from hy_eval.harness.run import _reuse
from tests.harness.report.test_report_escaping import embedded_data
from tests.harness.run.test_run import config as run_config
from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel, perfect_extraction
from tests.loopback import Reply


def config(server, tmp_path, name, **kw):
    """test_run's configuration, on a read-write cache in ``tmp_path``, run folder ``name``."""
    base = dict(
        suite=str(tmp_path / "toy"),
        cache_mode="read-write",
        cache_path=str(tmp_path / "cache.sqlite"),
        out=str(tmp_path / name),
        concurrency=4,
        retries=0,
    )
    base.update(kw)
    return run_config(server, tmp_path, **base)


def lines(run_dir):
    return Counter((run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines())


def test_second_run_reuses_every_record_and_gives_the_same_report(tmp_path):
    suite = write_suite(tmp_path / "toy", 6)
    with SuiteModel(suite.cases) as model:
        first_dir, first, _ = Runner(config(model.server, tmp_path, "one")).run()
        before = model.server.count
        second_dir, second, code = Runner(config(model.server, tmp_path, "two")).run()
        assert model.server.count == before  # nothing reached the model
    assert code == 0
    assert second.calls.records_reused == 6 and second.calls.calls == 0
    assert first.calls.records_reused == 0
    assert lines(second_dir) == lines(first_dir)  # the same records, byte for byte
    for key in ("metrics", "breakdown", "confusion", "failed_cases", "tokens", "cases"):
        assert getattr(second, key) == getattr(first, key), key
    for name in ("metrics.png", "confusion.png", "rules.png"):
        assert (second_dir / name).read_bytes() == (first_dir / name).read_bytes()
    html = (second_dir / "report.html").read_text(encoding="utf-8")
    # The second page holds every case (as data for the page's script).
    first_page = (first_dir / "report.html").read_text(encoding="utf-8")
    assert len(embedded_data(html)["cases"]) == 6
    assert embedded_data(html)["cases"] == embedded_data(first_page)["cases"]
    assert json.loads((second_dir / "summary.json").read_text())["calls"]["records_reused"] == 6
    from hy_eval.harness import terminal_summary

    assert "6 case records taken whole from the cache" in terminal_summary(second, second_dir)
    assert "taken whole" not in terminal_summary(first, first_dir)


def test_a_changed_case_alone_is_recomputed(tmp_path):
    suite = write_suite(tmp_path / "toy", 5)
    with SuiteModel(suite.cases) as model:
        Runner(config(model.server, tmp_path, "one")).run()
        path = tmp_path / "toy" / "toy.jsonl"
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        rows[2]["tags"] = ["toy", "edited"]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert load_suite(str(tmp_path / "toy")).cases[2].tags == ["toy", "edited"]
        _, summary, _ = Runner(config(model.server, tmp_path, "two")).run()
    # t-02's record is computed again, from the cached answers (its prompts are unchanged).
    assert summary.calls.records_reused == 4
    assert summary.calls.calls == 2 and summary.calls.cache_hits == 2
    assert summary.breakdown["tag"]["edited"].cases == 1


def test_other_settings_prompts_or_code_reuse_nothing(tmp_path, monkeypatch):
    suite = write_suite(tmp_path / "toy", 3)
    with SuiteModel(suite.cases) as model:
        Runner(config(model.server, tmp_path, "base")).run()
        for name, kw in (
            ("guard-off", {"guard": False}),
            ("variant", {"variant": "no_examples"}),
            ("other-model", {"model": "scripted-2"}),
        ):
            _, summary, _ = Runner(config(model.server, tmp_path, name, **kw)).run()
            assert summary.calls.records_reused == 0, name
        from hy_eval.harness.run import _runner

        real_versions = _runner.package_versions
        monkeypatch.setattr(
            _runner, "package_versions", lambda: {**real_versions(), "jinja2": "99.0"}
        )
        _, summary, _ = Runner(config(model.server, tmp_path, "upgraded-jinja2")).run()
        assert summary.calls.records_reused == 0
        monkeypatch.setattr(_runner, "package_versions", real_versions)
        monkeypatch.setattr(_reuse, "code_fingerprint", lambda: "edited code")
        before = model.server.count
        _, summary, _ = Runner(config(model.server, tmp_path, "code")).run()
        assert summary.calls.records_reused == 0
        assert summary.calls.cache_hits == 6  # the answers themselves still cached
        assert model.server.count == before


def test_modes_other_than_read_write_do_not_reuse(tmp_path):
    suite = write_suite(tmp_path / "toy", 3)
    with SuiteModel(suite.cases) as model:
        Runner(config(model.server, tmp_path, "one")).run()
        for mode in ("refresh", "replay-only", "off"):
            _, summary, _ = Runner(config(model.server, tmp_path, mode, cache_mode=mode)).run()
            assert summary.calls.records_reused == 0, mode


def test_records_with_provider_errors_are_not_kept(tmp_path):
    suite = write_suite(tmp_path / "toy", 3)
    ext = {c.id: perfect_extraction(c) for c in suite.cases}
    ext["t-01"] = Reply(500, {"error": {"message": "down"}})
    with SuiteModel(suite.cases, ext) as model:
        _, first, _ = Runner(config(model.server, tmp_path, "one", max_error_rate=1.0)).run()
        assert first.metrics["error_rate"].num == 1
        model.extraction["t-01"] = perfect_extraction(suite.cases[1])
        before = model.server.count
        _, second, _ = Runner(config(model.server, tmp_path, "two")).run()
        assert model.server.count - before == 2  # t-01 asked again, and now answered
    assert second.calls.records_reused == 2
    assert second.metrics["error_rate"].value == 0.0


def test_a_case_edited_during_the_run_stops_it_with_a_dataset_error(tmp_path, monkeypatch):
    from hy_eval.harness import RunError
    from hy_eval.harness.datasets import Suite

    cases = write_suite(tmp_path / "toy", 4).cases
    path = tmp_path / "toy" / "toy.jsonl"
    real = Suite.iter_lines

    def edit_then_read(self, ids=None):
        for n, (ref, text) in enumerate(real(self, ids)):
            if n == 2:  # the line is rewritten after validation, before it is run
                text = text.replace('"t-02"', '"t-99"')
            yield ref, text

    monkeypatch.setattr(Suite, "iter_lines", edit_then_read)
    with SuiteModel(cases) as model:
        with pytest.raises(RunError, match=r"toy.jsonl:3: the file changed during the run"):
            Runner(config(model.server, tmp_path, "one", concurrency=1)).run()
    assert path.exists()
    kept = (tmp_path / "one" / "cases.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in kept] == ["t-00", "t-01"]


def test_cassette_record_exports_every_answer_even_when_records_are_cached(tmp_path):
    from hy_eval.cli import main
    from tests.harness.scripted_suite import model_args

    suite = write_suite(tmp_path / "toy", 3)
    cache = tmp_path / "cache.sqlite"
    with SuiteModel(suite.cases) as model:
        Runner(config(model.server, tmp_path, "one")).run()  # records now in the cache
        cassette = tmp_path / "toy.jsonl"
        argv = ["cassette", "record", "--suite", str(tmp_path / "toy"), "--file", str(cassette)]
        argv += [*model_args(model.server), "--api-key", "sk-dummy", "--cache", str(cache)]
        assert main(argv) == 0
    assert len(cassette.read_text().splitlines()) == 6  # extraction + reconcile per case


def test_no_reuse_flag_recomputes_from_cached_answers(tmp_path):
    suite = write_suite(tmp_path / "toy", 3)
    with SuiteModel(suite.cases) as model:
        Runner(config(model.server, tmp_path, "one")).run()
        before = model.server.count
        _, summary, _ = Runner(config(model.server, tmp_path, "two", reuse=False)).run()
        assert model.server.count == before
    assert summary.calls.records_reused == 0 and summary.calls.cache_hits == 6


def test_the_code_fingerprint_sees_the_matchers_word_list(tmp_path):
    """The strict matcher's word list decides scores as code does: a record scored with
    another list must not be reused."""
    (tmp_path / "scoring" / "data").mkdir(parents=True)
    (tmp_path / "scoring" / "_strict.py").write_text("x = 1\n")
    words = tmp_path / "scoring" / "data" / "lexicon_en_zh.txt"
    words.write_text("dog\t狗\n")
    before = _reuse.fingerprint_of(tmp_path)
    words.write_text("dog\t狗\ncat\t猫\n")
    after = _reuse.fingerprint_of(tmp_path)
    assert after != before
    (tmp_path / "notes.md").write_text("a file that decides no score")
    assert _reuse.fingerprint_of(tmp_path) == after

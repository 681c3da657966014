"""The harness end to end through the real OpenAI provider against the loopback server:
a perfect scripted model scores perfectly on the real suite, planted mistakes give exactly
the hand-computed figures, and runs resume without losing or doubling a case (E2, E3)."""

import json

import pytest

from hy_eval.harness import RunConfig, Runner, load_suite
from hy_eval.harness.scoring import ACCURACY_METRICS, VIOLATION_METRICS
from tests.harness.scripted_suite import SuiteModel, perfect_extraction, scripted_config


def config(server, tmp_path, **kw):
    kw = {"out": tmp_path / "run", "concurrency": 8, "retries": 1, **kw}
    return scripted_config(server, kw.pop("out"), **kw)


def test_perfect_model_scores_perfectly_on_the_whole_suite(tmp_path):
    suite = load_suite("multi_speaker")
    with SuiteModel(suite.cases) as model:
        run_dir, summary, code = Runner(config(model.server, tmp_path)).run()
    assert code == 0
    m = summary.metrics
    failed = summary.failed_cases
    assert failed == [], failed
    expects_ops = any(c.expect.operations for c in suite.cases)
    for name in ACCURACY_METRICS:
        unset = name == "operation_accuracy" and not expects_ops  # no case expects any
        assert m[name].value == (None if unset else 1.0), name
    for name in VIOLATION_METRICS:
        assert m[name].value in (0.0, None), name
    assert m["case_pass"].n == len(suite.cases)
    assert m["merge_violation_rate_raw"].n > 0  # cases with existing memories reconciled
    for f in (
        "manifest.json",
        "cases.jsonl",
        "summary.json",
        "report.md",
        "report.html",
        "metrics.png",
        "confusion.png",
        "rules.png",
    ):
        assert (run_dir / f).stat().st_size > 0, f
    assert summary.breakdown["lang"]["zh"].cases == sum(c.lang == "zh" for c in suite.cases)


def write_suite(folder, n):
    """n cases: Tim talks with John; gold: one user fact (coffee); m1 exists about the user."""
    folder.mkdir()
    lines = []
    for i in range(n):
        lines.append(
            json.dumps(
                {
                    "id": f"t-{i:02d}",
                    "lang": "en",
                    "rules": ["A1", "R1"],
                    "tags": ["toy"],
                    "existing": [{"id": "m1", "text": "The user likes tea and coffee."}],
                    "messages": [
                        {"role": "user", "name": "Tim", "content": f"I like coffee number {i}."},
                        {"role": "assistant", "name": "John", "content": "Nice."},
                    ],
                    "expect": {
                        "facts": [
                            {"subject": "user", "owner": "user", "keywords": ["coffee", f"#{i}"]}
                        ],
                        "absent": [{"subject": "John", "keywords": ["coffee", f"#{i}"]}],
                        "profile": {"name": "Tim", "absent": ["Berlin"]},
                        "untouched": ["m1"],
                    },
                }
            )
        )
    (folder / "toy.jsonl").write_text("\n".join(lines) + "\n")
    return load_suite(str(folder))


def test_planted_mistakes_give_hand_computed_figures(tmp_path):
    suite = write_suite(tmp_path / "toy", 10)
    ext = {c.id: perfect_extraction(c) for c in suite.cases}
    # k=3 cases attribute the user's fact to John (a subject swap).
    for i in (0, 1, 2):
        ext[f"t-{i:02d}"] = {
            "facts": [{"text": f"John likes coffee #{i}.", "owner": "user"}],
            "basic_info": {"name": "Tim"},
        }
    # One case has the owner wrong; one leaks John's city into L0.
    ext["t-03"] = {
        "facts": [{"text": "The user likes coffee #3.", "owner": "agent"}],
        "basic_info": {},
    }
    ext["t-04"] = {
        "facts": [{"text": "The user likes coffee #4.", "owner": "user"}],
        "basic_info": {"location": "Berlin"},
    }
    # t-01: John's coffee UPDATEs the user's tea memory: cross-subject, blocked by the guard.
    # t-06: an unparseable reconcile answer: fallback, counted as a parse failure.
    rec = {
        "t-01": {
            "operations": [
                {"op": "UPDATE", "fact": 0, "target_ids": ["m1"], "text": "John likes coffee #1."}
            ]
        },
        "t-06": "not json at all",
    }
    with SuiteModel(suite.cases, ext, rec) as model:
        _, summary, _ = Runner(config(model.server, tmp_path, suite=str(tmp_path / "toy"))).run()
    m = summary.metrics
    assert m["fact_recall"].value == 1.0  # every gold fact matched by keywords
    assert m["attribution_accuracy"].value == pytest.approx(7 / 10)
    assert m["owner_accuracy"].value == pytest.approx(9 / 10)
    assert m["misattribution_rate"].value == pytest.approx(3 / 10)  # John + coffee
    assert m["profile_leak_rate"].value == pytest.approx(1 / 10)
    assert m["profile_name_accuracy"].value == 1.0  # P2: Tim is written though omitted
    # Reconcile runs in every case: m1 mentions coffee, so full-text search relates it.
    assert m["merge_violation_rate_raw"].num == 1
    assert m["merge_violation_rate_raw"].n == 9  # t-06 fell back: no raw operations
    assert m["merge_violation_rate_applied"].value == 0.0  # the guard
    assert m["fallback_rate"].num == 1 and m["parse_failure_rate"].value == pytest.approx(1 / 10)
    assert m["untouched_violation_rate"].value == 0.0
    assert set(summary.failed_cases) == {"t-00", "t-01", "t-02", "t-03", "t-04", "t-06"}
    assert m["case_pass"].value == pytest.approx(4 / 10)
    assert summary.confusion["user"]["named"] == 3 and summary.confusion["user"]["user"] == 7


def test_guard_off_counts_the_applied_merge(tmp_path):
    suite = write_suite(tmp_path / "toy", 2)
    ext = {c.id: perfect_extraction(c) for c in suite.cases}
    ext["t-00"] = {"facts": [{"text": "John likes coffee #0.", "owner": "user"}], "basic_info": {}}
    rec = {
        "t-00": {
            "operations": [
                {"op": "UPDATE", "fact": 0, "target_ids": ["m1"], "text": "John likes coffee #0."}
            ]
        }
    }
    with SuiteModel(suite.cases, ext, rec) as model:
        _, summary, _ = Runner(
            config(model.server, tmp_path, suite=str(tmp_path / "toy"), guard=False)
        ).run()
    m = summary.metrics
    assert m["merge_violation_rate_applied"].num == 1
    assert m["untouched_violation_rate"].num == 1  # m1 was overwritten


def test_resume_finishes_without_losing_or_doubling(tmp_path):
    suite = write_suite(tmp_path / "toy", 6)
    with SuiteModel(suite.cases) as model:
        cfg = config(model.server, tmp_path, suite=str(tmp_path / "toy"))
        run_dir, first, _ = Runner(cfg).run()
        lines = (run_dir / "cases.jsonl").read_text().splitlines(keepends=True)
        # Simulate a kill: two cases done, the third torn mid-write.
        (run_dir / "cases.jsonl").write_text("".join(lines[:2]) + lines[2][:40])
        before = model.server.count
        _, resumed, _ = Runner(config(model.server, tmp_path, resume=str(run_dir), out=None)).run()
        assert model.server.count - before == 4 * 2  # four cases redone, two calls each
    ids = [json.loads(line)["id"] for line in (run_dir / "cases.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(c.id for c in suite.cases) and len(ids) == len(set(ids))
    assert resumed.metrics == first.metrics


def test_provider_errors_mark_cases_failed_and_exit_3(tmp_path):
    from tests.loopback import Reply

    suite = write_suite(tmp_path / "toy", 4)
    ext = {c.id: perfect_extraction(c) for c in suite.cases}
    ext["t-02"] = Reply(500, {"error": {"message": "down"}})
    with SuiteModel(suite.cases, ext) as model:
        ext_calls = dict(ext)
        model.extraction = ext_calls
        _, summary, code = Runner(
            config(model.server, tmp_path, suite=str(tmp_path / "toy"), retries=0)
        ).run()
    assert summary.metrics["error_rate"].value == pytest.approx(1 / 4)
    assert code == 3  # above the default tolerance of 10%
    assert summary.calls.errors == 1


def test_a_run_that_cannot_start_leaves_no_folder(tmp_path):
    from hy_eval.harness import RunError

    for kw in ({"provider": "gemini"}, {"repeats": 0}, {"prices": str(tmp_path / "none.toml")}):
        out = tmp_path / "run"
        cfg = RunConfig(suite="multi_speaker", out=str(out), progress=False, **kw)
        with pytest.raises(RunError):
            Runner(cfg).run()
        assert not out.exists(), kw

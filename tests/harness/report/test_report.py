"""The report's single pass over cases.jsonl (E7): the drill-down shows failed cases
first and at most DRILLDOWN_LIMIT cases, keeping no more than that many in memory."""

import json

from hy_eval.harness.report import _write as _report


def record(i, passed):
    return {
        "id": f"c{i}",
        "lang": "en",
        "rules": ["A1"],
        "tags": [],
        "status": "error",
        "error": "x",
        "score": {"passed": passed, "counts": {}, "confusion": []},
    }


def shown_ids(drilldown):
    return [c["id"] for c in drilldown["cases"]]


def test_drilldown_is_failed_first_and_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(_report, "DRILLDOWN_LIMIT", 3)
    path = tmp_path / "cases.jsonl"
    verdicts = [True, True, False, True, False, True, True]
    path.write_text("".join(json.dumps(record(i, v)) + "\n" for i, v in enumerate(verdicts)))
    scan = _report._Scan(path, None)
    drilldown = scan.drilldown()
    assert shown_ids(drilldown) == ["c2", "c4", "c0"]  # both failures, then the first pass
    assert len(scan.entries[False]) + len(scan.entries[True]) <= 3
    assert drilldown["shown"] == 7  # the page says only 3 of 7 are shown


def test_drilldown_with_more_failures_than_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(_report, "DRILLDOWN_LIMIT", 2)
    path = tmp_path / "cases.jsonl"
    verdicts = [True, False, False, False]
    path.write_text("".join(json.dumps(record(i, v)) + "\n" for i, v in enumerate(verdicts)))
    assert shown_ids(_report._Scan(path, None).drilldown()) == ["c1", "c2"]


def test_drilldown_without_cap_shows_everything_failed_first(tmp_path):
    path = tmp_path / "cases.jsonl"
    verdicts = [True, False, True]
    path.write_text("".join(json.dumps(record(i, v)) + "\n" for i, v in enumerate(verdicts)))
    drilldown = _report._Scan(path, None).drilldown()
    assert shown_ids(drilldown) == ["c1", "c0", "c2"] and drilldown["shown"] == 3


def ok_record(i, system):
    return {
        "id": f"ok{i}",
        "lang": "en",
        "rules": ["A1"],
        "tags": [],
        "status": "ok",
        "rendered": f"[user]: case {i}",
        "score": {"passed": True, "counts": {}, "confusion": [], "facts": [], "checks": []},
        "stages": {
            "extract": {
                "template": "extract.en.j2",
                "system": system,
                "user": f"USER PART {i}",
                "raw": "{}",
                "parse_error": None,
            }
        },
        "operations": {"raw": [], "applied": []},
        "store_after": {"memories": []},
    }


def test_each_system_prompt_is_kept_once_and_referenced(tmp_path):
    path = tmp_path / "cases.jsonl"
    systems = ["SYSTEM <A>", "SYSTEM <B>", "SYSTEM <A>", "SYSTEM <A>"]
    path.write_text("".join(json.dumps(ok_record(i, s)) + "\n" for i, s in enumerate(systems)))
    drilldown = _report._Scan(path, None).drilldown()
    assert drilldown["systems"] == ["SYSTEM <A>", "SYSTEM <B>"]
    stages = [c["stages"]["extract"] for c in drilldown["cases"]]
    assert [s["system"] for s in stages] == [0, 1, 0, 0]
    assert [s["user"] for s in stages] == [f"USER PART {i}" for i in range(4)]


def scored_record(i, repeat=0):
    """A record whose counts vary by case, so that resampling order would show."""
    rec = ok_record(i, "SYSTEM")
    rec.update(
        id=f"s{i:03d}",
        repeat=repeat,
        lang="en" if i % 3 else "zh",
        rules=["A1", "P2"] if i % 2 else ["A1"],
        tags=["hard"] if i % 5 == 0 else [],
    )
    rec["score"].update(
        passed=(i * 7 + repeat) % 3 != 0,
        counts={
            "attribution_accuracy": [i % 4, 3],
            "fact_recall": [(i + repeat) % 3, 2 + i % 2],
        },
    )
    return rec


def test_cis_do_not_depend_on_the_order_cases_finished_in(tmp_path):
    """E3, E6: concurrent runs append records in the order answers come back; the same
    records in another order must give the same values and the same bootstrap CIs."""
    import random

    lines = [json.dumps(scored_record(i, r)) + "\n" for i in range(60) for r in range(2)]
    shuffled = list(lines)
    random.Random(7).shuffle(shuffled)
    assert shuffled != lines
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(lines))
    b.write_text("".join(shuffled))
    core_a = _report._results(a, None, None)[0]
    core_b = _report._results(b, None, None)[0]
    assert core_a.metrics["attribution_accuracy"].ci[0] is not None
    assert core_a.metrics == core_b.metrics
    assert core_a.breakdown == core_b.breakdown
    assert core_a.repeats == core_b.repeats

"""The report's single pass over cases.jsonl (E7): the drill-down shows failed cases
first and at most DRILLDOWN_LIMIT cases, keeping no more than that many in memory."""

import json

from hy_eval.harness import _report


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


def shown_ids(html):
    return [part.split('"')[1] for part in html.split("<details id=")[1:]]


def test_drilldown_is_failed_first_and_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(_report, "DRILLDOWN_LIMIT", 3)
    path = tmp_path / "cases.jsonl"
    verdicts = [True, True, False, True, False, True, True]
    path.write_text("".join(json.dumps(record(i, v)) + "\n" for i, v in enumerate(verdicts)))
    scan = _report._Scan(path, None)
    html = scan.drilldown()
    assert shown_ids(html) == ["c2", "c4", "c0"]  # both failures, then the first pass
    assert len(scan.html[False]) + len(scan.html[True]) <= 3
    assert "Only the first 3 cases are shown" in html


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
    html = _report._Scan(path, None).drilldown()
    assert shown_ids(html) == ["c1", "c0", "c2"] and "Only the first" not in html


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


def test_each_system_prompt_is_shown_once_and_linked(tmp_path):
    path = tmp_path / "cases.jsonl"
    systems = ["SYSTEM <A>", "SYSTEM <B>", "SYSTEM <A>", "SYSTEM <A>"]
    path.write_text("".join(json.dumps(ok_record(i, s)) + "\n" for i, s in enumerate(systems)))
    html = _report._Scan(path, None).drilldown()
    assert html.count("SYSTEM &lt;A&gt;") == 1 and html.count("SYSTEM &lt;B&gt;") == 1
    assert html.count('href="#system-1"') == 3 and html.count('href="#system-2"') == 1
    assert all(f"USER PART {i}" in html for i in range(4))

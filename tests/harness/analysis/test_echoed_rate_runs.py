"""``echoed_subject_rate`` through a run's files (E3, E4, E7): scored by the real scorer on
planted answers, it reaches summary.json (pooled, per language and per rule), report.md
and report.html, and ``compare`` with its paired interval, lower being better."""

import json

import pytest

from hy_eval.cli import main
from hy_eval.harness import Case, Outcome, score_case, write_reports
from hy_eval.harness.runlog import CallCounts, RunManifest
from hy_eval.memory import PromptLibrary, example_people
from tests.harness.report.test_pages import write_run
from tests.harness.report.test_report import ok_record
from tests.harness.report.test_report_escaping import manifest

METRIC = "echoed_subject_rate"
MESSAGES = {
    "en": [
        {"role": "user", "name": "Sam", "content": "I moved to Leeds."},
        {"role": "assistant", "name": "Jo", "content": "I work at the bakery."},
    ],
    "zh": [
        {"role": "user", "name": "小明", "content": "我搬到了杭州。"},
        {"role": "assistant", "name": "小红", "content": "我在面包店上班。"},
    ],
}
#: Per language: a fact about the user, and one echoed from the prompt's examples.
FACTS = {
    "en": ("The user moved to Leeds.", "Mary teaches piano."),
    "zh": ("用户搬到了杭州。", "王伟在学校教钢琴。"),
}


def _record(i: int, echo: bool) -> dict:
    """Case ``s00i`` (even: English, odd: Chinese) with two predicted facts, the second
    echoed when ``echo``."""
    lang = "en" if i % 2 == 0 else "zh"
    case = Case.model_validate(
        {
            "id": f"s{i:03d}",
            "lang": lang,
            "rules": ["A2"] if i < 6 else ["A8"],
            "messages": MESSAGES[lang],
            "expect": {"facts": [{"subject": "user", "owner": "user", "keywords": ["x"]}]},
        }
    )
    user, echoed = FACTS[lang]
    texts = [user, echoed if echo else user]
    out = Outcome(
        facts=[{"text": t, "owner": "user"} for t in texts],
        example_people=example_people(PromptLibrary("default"), lang),
    )
    rec = ok_record(i, "SYSTEM")
    rec.update(id=case.id, lang=lang, rules=case.rules)
    rec["score"] = score_case(case, out).record().to_data()
    return rec


@pytest.fixture
def two_runs(tmp_path):
    """Twelve cases. A echoes on s000, s001, s004, s005, s008, s009 (three English, three
    Chinese; four under A2, two under A8): 6 of 24 facts. B echoes on none."""
    a = write_run(tmp_path / "a", [_record(i, echo=i % 4 in (0, 1)) for i in range(12)])
    b = write_run(tmp_path / "b", [_record(i, echo=False) for i in range(12)], "other")
    summary = write_reports(a, RunManifest.model_validate(manifest()), CallCounts(), 0.0)
    write_reports(b, RunManifest.model_validate(manifest()), CallCounts(), 0.0)
    return a, b, summary


def test_the_summary_carries_the_rate_pooled_per_language_and_rule(two_runs):
    run_a, _, summary = two_runs
    entry = summary.metrics[METRIC]
    assert (entry.num, entry.den, entry.n) == (6, 24, 12)
    assert entry.value == pytest.approx(0.25)
    by_lang = summary.breakdown["lang"]
    assert by_lang["en"].metric(METRIC).value == pytest.approx(3 / 12)
    assert by_lang["zh"].metric(METRIC).value == pytest.approx(3 / 12)
    by_rule = summary.breakdown["rule"]
    assert by_rule["A2"].metric(METRIC).value == pytest.approx(4 / 12)
    assert by_rule["A8"].metric(METRIC).value == pytest.approx(2 / 12)
    data = json.loads((run_a / "summary.json").read_text())
    assert data["metrics"][METRIC]["num"] == 6 and METRIC in data["breakdown"]["lang"]["zh"]
    report = (run_a / "report.md").read_text()
    assert f"| {METRIC} | 0.250 [" in report and f"- `{METRIC}`: " in report
    assert METRIC in (run_a / "report.html").read_text(encoding="utf-8")


def test_compare_gives_its_paired_interval_lower_being_better(two_runs, tmp_path, capsys):
    run_a, run_b, _ = two_runs
    out = tmp_path / "cmp.json"
    capsys.readouterr()
    assert main(["compare", str(run_a), str(run_b), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    entry = json.loads(out.read_text())["metrics"][METRIC]
    assert entry["higher_is_better"] is False
    assert (entry["a"], entry["b"], entry["n"]) == (pytest.approx(0.25), 0.0, 12)
    lo, hi = entry["ci"]
    assert entry["diff"] == pytest.approx(-0.25)
    assert lo <= entry["diff"] <= hi and lo < 0
    assert entry["worse_cases"] == [] and entry["better_cases"] == 6
    row = next(line.split() for line in text.splitlines() if line.startswith(METRIC))
    assert row[1:4] == ["12", "0.250", "0.000"]

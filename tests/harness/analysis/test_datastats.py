"""``hy-eval datasets stats``: rules derived from checks, denominators that
agree with scoring, near-duplicate clusters and the MDE formula."""

import json
import math

import pytest

from hy_eval.cli import main
from hy_eval.harness import Case, load_suite
from hy_eval.harness.analysis import (
    checked_rules,
    conversation_text,
    near_duplicates,
    power_table,
    suite_stats,
)
from tests.harness.oracle import score_oracle

BASE = {
    "id": "s-1",
    "lang": "en",
    "rules": ["A2"],
    "messages": [
        {"role": "user", "name": "Tim", "content": "Do you still drink coffee?"},
        {"role": "assistant", "name": "John", "content": "I drink black coffee every morning."},
    ],
    "expect": {
        "facts": [{"subject": "John", "owner": "user", "keywords": ["black coffee"]}],
    },
}


def case(**expect_and_more):
    data = json.loads(json.dumps(BASE))
    for key, value in expect_and_more.items():
        if key in ("existing", "messages", "aliases", "lang"):
            data[key] = value
        else:
            data["expect"][key] = value
    return Case.model_validate(data)


def test_rules_come_from_checks_not_tags():
    plain = case()
    assert checked_rules(plain) == {"A2", "A4", "A5", "M2"}
    # The tag R3 alone checks nothing: no existing memory.
    assert "R3" not in checked_rules(case())
    coffee = case(existing=[{"id": "m1", "text": "The user drinks black coffee every morning."}])
    assert {"R1", "R2", "R3"} <= checked_rules(coffee)
    unrelated = case(existing=[{"id": "m1", "text": "The user plays the violin."}])
    assert not {"R1", "R2", "R3"} & checked_rules(unrelated)
    same = case(existing=[{"id": "m1", "text": "John drinks black coffee every morning."}])
    assert "R3" in checked_rules(same) and "R1" not in checked_rules(same)
    a6 = case(absent=[{"subject": "user", "keywords": ["coffee"], "without": ["Theo"]}])
    assert {"A6", "A1", "M1", "M6"} <= checked_rules(a6)
    # A `without` that only exempts facts naming a speaker tests attribution, not A6.
    exempt = case(
        absent=[{"subject": "user", "keywords": ["coffee"], "without": [["John", "user"]]}]
    )
    assert "A6" not in checked_rules(exempt) and "A1" in checked_rules(exempt)
    a7 = case(
        facts=[
            {"subject": "John", "owner": "user", "keywords": ["black coffee"]},
            {"subject": "user", "owner": "user", "keywords": ["black coffee"]},
        ]
    )
    assert "A7" in checked_rules(a7)
    p = case(profile={"name": "Tim", "absent": ["John"]})
    assert {"P1", "P2"} <= checked_rules(p) and "P3" not in checked_rules(p)  # a name never fails
    p3 = case(profile={"absent": ["morning"]})
    assert {"P1", "P3", "P4"} <= checked_rules(p3) and "P2" not in checked_rules(p3)
    blocks = case(
        messages=[
            {"role": "user", "name": "Tim", "content": [{"type": "text", "text": "Coffee?"}]},
            {"role": "assistant", "name": "John", "content": "I drink black coffee."},
        ]
    )
    assert "M5" in checked_rules(blocks)
    latin_in_zh = case(
        lang="zh",
        messages=[
            {"role": "user", "name": "Tim", "content": "还喝咖啡吗？"},
            {"role": "assistant", "name": "John", "content": "我每天早上喝黑咖啡。"},
        ],
        facts=[{"subject": "John", "owner": "user", "keywords": ["黑咖啡"]}],
    )
    assert "A8" in checked_rules(latin_in_zh)  # a Latin name in Chinese text


FIXED_BY_THE_DATA = (
    "case_pass",
    "fact_recall",
    "attribution_accuracy",
    "owner_accuracy",
    "noncanonical_subject_rate",
    "misattribution_rate",
    "untouched_violation_rate",
    "operation_accuracy",
    "profile_name_accuracy",
    "profile_leak_rate",
)


def test_denominators_agree_with_scoring_on_the_shipped_suite():
    # A perfect answer matches every gold fact, so its denominators are the data's.
    suite = load_suite("multi_speaker")
    st = suite_stats(suite)
    totals, failures = score_oracle(
        suite.cases,
        passes_of=lambda c: [("plain", False, 0)] if c.lang == "en" else [("no_space", False, 0)],
    )
    assert failures == []
    for metric in FIXED_BY_THE_DATA:
        assert st.denominators[metric] == totals[metric][1], metric
    assert st.cases == len(suite.cases) == st.denominators["case_pass"]


def test_near_duplicates():
    a = case()
    renamed = case(
        messages=[
            {"role": "user", "name": "Ann", "content": "Do you still drink coffee?"},
            {"role": "assistant", "name": "Mark", "content": "I drink black coffee every morning."},
        ],
        facts=[{"subject": "Mark", "owner": "user", "keywords": ["black coffee"]}],
    )
    other = case(
        messages=[
            {"role": "user", "name": "Tim", "content": "Where did you grow up?"},
            {"role": "assistant", "name": "John", "content": "In a small town near Porto."},
        ],
        facts=[{"subject": "John", "owner": "user", "keywords": ["Porto"]}],
    )
    texts = [conversation_text(c) for c in (a, renamed, other)]
    assert near_duplicates(["a", "renamed", "other"], texts) == [["a", "renamed"]]


def test_mde_formula():
    z = 1.959963984540054 + 0.8416212335729143
    [row] = [
        r
        for r in power_table({"case_pass": 100}, {"case_pass": 100}, {"case_pass": 0.3})
        if r["metric"] == "case_pass"
    ]
    assert row["mde"] == pytest.approx(z * math.sqrt(2 * 0.3 * 0.7 / 100))
    rows = power_table({"case_pass": 400}, {"case_pass": 400}, {}, discordance=0.1)
    assert rows[0]["mde"] == pytest.approx(z * math.sqrt(0.1 / 400)) and rows[0]["p"] == 0.5
    # Attribution counts only matched facts: the baseline's recall scales n.
    rows = power_table({"attribution_accuracy": 200}, {}, {"fact_recall": 0.5})
    [row] = [r for r in rows if r["metric"] == "attribution_accuracy"]
    assert row["n"] == 100
    # ... and the suite's capacity counts every gold fact, at the same p (0.5 here).
    assert row["n_all"] == 200
    assert row["mde_all"] == pytest.approx(z * math.sqrt(0.5 / 200))
    assert row["mde_all"] < row["mde"]


def test_stats_command(capsys):
    assert main(["datasets", "stats", "multi_speaker"]) == 0
    out = capsys.readouterr().out
    for part in (
        "languages:",
        "rules (tagged / checked",
        "tags:",
        "metric denominators",
        "messages per case",
        "near-duplicate clusters",
        "minimum detectable effect",
    ):
        assert part in out, part
    assert main(["datasets", "stats", "multi_speaker", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cases"] == len(load_suite("multi_speaker").cases)
    assert main(["datasets", "stats", "multi_speaker", "--discordance", "0"]) == 2


def test_stats_can_assume_another_runs_rates(tmp_path, capsys):
    # A run folder's summary (values under "value") or a baseline file both serve.
    run = tmp_path / "run"
    run.mkdir()
    metrics = {"fact_recall": {"value": 1.0}, "attribution_accuracy": {"value": 0.9}}
    (run / "summary.json").write_text(json.dumps({"metrics": metrics}), encoding="utf-8")
    suite = load_suite("multi_speaker")
    st = suite_stats(suite, rates_from=run)
    row = {r["metric"]: r for r in st.power}["attribution_accuracy"]
    # Every gold fact matched (recall 1.0): n is the attribution denominator itself.
    assert row["n"] == st.denominators["attribution_accuracy"] and row["p"] == 0.9
    assert st.rate_source == str(run)
    baseline = tmp_path / "b.json"
    blessed = {"suite": "s", "dataset_hash": "h", "provider": "p", "model": "m"}
    blessed["metrics"] = {"attribution_accuracy": 0.5}
    baseline.write_text(json.dumps(blessed), encoding="utf-8")
    assert main(["datasets", "stats", "multi_speaker", "--rates", str(baseline)]) == 0
    assert f"p from {baseline}" in capsys.readouterr().out
    (tmp_path / "empty.json").write_text("{}", encoding="utf-8")
    assert (
        main(["datasets", "stats", "multi_speaker", "--rates", str(tmp_path / "empty.json")]) == 2
    )
    assert "no metric values" in capsys.readouterr().err

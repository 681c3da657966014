"""Scoring with each matcher: ``keyword`` is the default and unchanged,
``fuzzy`` pairs paraphrases keyword misses and refuses another object, and the judge's
verdicts are assigned one-to-one with unusable answers counted as no match."""

from hy_eval.harness import Case, Outcome, RunManifest, score_case
from hy_eval.harness.scoring import (
    FuzzyMatcher,
    KeywordMatcher,
    Verdict,
    VerdictMatcher,
    matcher_info,
)

CASE = Case.model_validate(
    {
        "id": "m",
        "lang": "en",
        "rules": ["A1"],
        "messages": [
            {"role": "user", "name": "Tim", "content": "x"},
            {"role": "assistant", "name": "John", "content": "y"},
        ],
        "expect": {
            "facts": [
                {
                    "subject": "user",
                    "owner": "user",
                    "text": "The user works as a nurse at a hospital in Berlin.",
                    "keywords": ["nurse", "Charité"],
                },
                {
                    "subject": "John",
                    "owner": "user",
                    "text": "John likes coffee.",
                    "keywords": ["coffee"],
                },
            ]
        },
    }
)


def outcome(*texts):
    return Outcome(facts=[{"text": t, "owner": "user"} for t in texts])


def recall(score):
    return score.counts["fact_recall"]


def test_keyword_is_the_default_and_adds_nothing_to_the_records():
    out = outcome("The user is a nurse at the Charité.", "John likes coffee.")
    default, explicit = score_case(CASE, out), score_case(CASE, out, KeywordMatcher())
    assert default.record() == explicit.record()
    assert recall(default) == (2, 2)
    assert all("match" not in ch["detail"] for ch in default.checks if ch["check"] == "fact")


def _deposit_case(first, second):
    facts = {
        "deposit": {"subject": "John", "owner": "user", "keywords": ["deposit"]},
        "motorbike": {"subject": "John", "owner": "user", "keywords": ["motorbike", "deposit"]},
    }
    data = CASE.model_dump(exclude_none=True)
    data["expect"] = {"facts": [facts[first], facts[second]]}
    return Case.model_validate(data)


def test_keyword_assignment_does_not_depend_on_order():
    # The prediction holding both keywords must go to the gold fact that needs both,
    # whichever gold fact or prediction comes first.
    both = "John is selling his motorbike to add to the deposit."
    one = "John is saving for a deposit on a flat."
    for golds in (("deposit", "motorbike"), ("motorbike", "deposit")):
        for texts in ((both, one), (one, both)):
            score = score_case(_deposit_case(*golds), outcome(*texts))
            assert recall(score) == (2, 2), (golds, texts)
            assert score.counts["attribution_accuracy"] == (2, 2)


def test_fuzzy_pairs_a_paraphrase_keyword_misses():
    out = outcome("The user is a nurse at a Berlin hospital.", "John likes tea.")
    assert recall(score_case(CASE, out)) == (0, 2)
    fuzzy = score_case(CASE, out, FuzzyMatcher(CASE.speakers))
    # The nurse paraphrase is paired; "likes tea" is not "likes coffee".
    assert recall(fuzzy) == (1, 2)
    detail = fuzzy.checks[0]["detail"]
    assert detail["matched"] == 0 and detail["match"]["by"] == "similarity"
    assert detail["match"]["similarity"] >= 0.6
    assert fuzzy.checks[1]["detail"]["matched"] is None


def test_fuzzy_accepts_every_keyword_pair():
    out = outcome("Tim: Charité nurse.", "John: coffee!")
    assert recall(score_case(CASE, out, FuzzyMatcher(CASE.speakers))) == (2, 2)


def test_fuzzy_prefers_the_right_subject_like_keyword():
    # Both predictions fit the user's gold fact; the one about the user must take it,
    # and the one about John is then left for nothing (John's gold fact is coffee).
    out = outcome(
        "John is a nurse at a Berlin hospital.", "The user is a nurse at a Berlin hospital."
    )
    s = score_case(CASE, out, FuzzyMatcher(CASE.speakers))
    assert s.checks[0]["detail"]["matched"] == 1
    assert s.counts["attribution_accuracy"] == (1, 1)


def test_judge_verdicts_assigned_one_to_one_and_unusable_reported():
    out = outcome("Tim nurses in Berlin.", "John drinks coffee daily.", "The user nurses.")
    verdicts = {
        (0, 0): Verdict(True, "same job"),
        (0, 2): Verdict(True, "same job, the user"),
        (1, 1): Verdict(False, "", "unparsable answer: not JSON"),
    }
    s = score_case(CASE, out, VerdictMatcher(verdicts))
    # Gold 0 takes a prediction judged the same; both are about the user (Tim is the
    # user by name), so either is right. Gold 1's only candidate answer was unusable.
    assert s.counts["fact_recall"] == (1, 2)
    first, second = (ch["detail"] for ch in s.checks if ch["check"] == "fact")
    assert first["matched"] in (0, 2) and first["match"]["reason"].startswith("same job")
    assert second["matched"] is None
    assert second["match"] == {"judge_unusable": {"1": "unparsable answer: not JSON"}}
    assert s.record().judge_unusable() == 1


def test_judge_with_no_verdicts_matches_nothing():
    s = score_case(CASE, outcome("John likes coffee."), VerdictMatcher({}))
    assert recall(s) == (0, 2)


def _manifest(**params):
    return RunManifest(suite="s", provider="openai", model="m", params=params)


def test_matcher_info_names_the_matcher_and_defaults_to_keyword():
    old = matcher_info(_manifest(), 0)  # a run from before the matcher was named
    assert old["matcher"] == "keyword"
    # How far the matcher can be trusted, from the benchmark's test part: a model that
    # is not the embedded one reads the capable_run pairs (30 or more a language).
    quality = old["matcher_quality"]
    assert quality.source.startswith("the capable_run pairs of the test part of")
    assert set(quality.to_data()) >= {"all", "en", "zh"}
    strict = matcher_info(_manifest(matcher="strict"), 0)["matcher_quality"]
    assert strict.of("zh").precision.value > quality.of("zh").precision.value
    info = matcher_info(_manifest(matcher="judge"), 3)
    assert info["matcher"] == "judge" and "matcher_quality" not in info
    assert info["judge"].to_data() == {
        "provider": "openai",
        "model": "m",
        "variant": "default",
        "unusable": 3,
    }

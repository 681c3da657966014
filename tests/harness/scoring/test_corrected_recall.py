"""fact_recall corrected for the matcher's own errors (docs/metrics.md): matched x
precision / recall per language, with an interval that carries the run's and the
matcher's uncertainty."""

from hy_eval.harness.runlog import BreakdownGroup, MatcherQuality, RunSummary
from hy_eval.harness.scoring import corrected_recall, corrected_text


def rate(num, den):
    return {"value": num / den, "num": num, "den": den}


def langs(en=(0.2, [0.15, 0.25], 500), zh=(0.1, [0.07, 0.13], 1000)):
    """The summary's breakdown by language, with fact_recall only."""
    return {
        lang: BreakdownGroup.model_validate(
            {"cases": 1, "fact_recall": {"value": v, "ci": ci, "den": den}}
        )
        for lang, (v, ci, den) in (("en", en), ("zh", zh))
    }


def quality(p_en, r_en, p_zh, r_zh):
    return MatcherQuality.model_validate(
        {
            "en": {"precision": p_en, "recall": r_en},
            "zh": {"precision": p_zh, "recall": r_zh},
        }
    )


def test_a_matcher_as_precise_as_it_is_sensitive_leaves_recall_as_it_is():
    q = quality(rate(80, 100), rate(80, 100), rate(60, 100), rate(60, 100))
    c = corrected_recall(langs(), q)
    assert abs(c.value - (0.2 * 500 + 0.1 * 1000) / 1500) < 1e-9
    lo, hi = c.ci
    # The interval holds the run's own uncertainty and the matcher's: wider than the run's.
    assert lo < c.value < hi
    assert hi - lo > (0.13 - 0.07) * 1000 / 1500


def test_false_matches_lower_and_missed_matches_raise_the_corrected_recall():
    loose = corrected_recall(
        langs(), quality(rate(50, 100), rate(90, 100), rate(50, 100), rate(90, 100))
    )
    strict = corrected_recall(
        langs(), quality(rate(95, 100), rate(50, 100), rate(95, 100), rate(50, 100))
    )
    observed = (0.2 * 500 + 0.1 * 1000) / 1500
    assert loose.value < observed < strict.value
    assert "corrected for its errors, fact_recall would be about" in corrected_text(
        RunSummary(fact_recall_corrected=loose)
    )


def test_no_quality_no_correction():
    assert corrected_recall(langs(), None) is None
    assert corrected_text(RunSummary()) == ""

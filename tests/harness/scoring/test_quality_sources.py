"""Which benchmark figures a run's matcher line and its corrected fact_recall use
(rule E7: every number says how it was made): the pairs of the source that fits the
run's model (the embedded model's runs: embedded_run; any other model: capable_run),
or the pooled figures when that source has fewer than 30 pairs in a language; the line
says which, and that it fell back."""

import json

import pytest

from hy_eval.harness.report._write import matcher_line
from hy_eval.harness.runlog import BreakdownGroup, RunManifest, RunSummary
from hy_eval.harness.scoring import (
    EMBEDDED_MODEL,
    MIN_SOURCE_PAIRS,
    _quality,
    corrected_recall,
    matcher_info,
    source_for_model,
)


def scores(pairs, tp, fp, fn):
    def rate(num, den):
        return {"value": num / den, "ci": [0.0, 1.0], "num": num, "den": den}

    return {"pairs": pairs, "precision": rate(tp, tp + fp), "recall": rate(tp, tp + fn)}


def entry(pairs, tp, fp, fn):
    """A matcher's figures with ``pairs`` per language and the same counts in each."""
    return {
        "all": scores(2 * pairs, 2 * tp, 2 * fp, 2 * fn),
        "en": scores(pairs, tp, fp, fn),
        "zh": scores(pairs, tp, fp, fn),
    }


QUALITY = {
    "source": "the test part of bench.jsonl (500 judged pairs)",
    "matchers": {"strict": entry(250, 80, 20, 20)},
    "by_source": {
        "embedded_run": {
            "source": "the embedded_run pairs of the test part of bench.jsonl (100 judged pairs)",
            "matchers": {"strict": entry(MIN_SOURCE_PAIRS, 10, 10, 5)},
        },
        "capable_run": {
            "source": "the capable_run pairs of the test part of bench.jsonl (58 judged pairs)",
            "matchers": {"strict": entry(MIN_SOURCE_PAIRS - 1, 20, 1, 1)},
        },
    },
}


@pytest.fixture
def quality_file(tmp_path, monkeypatch):
    """quality.json as ``data`` says (the committed one is re-measured as the bench grows)."""

    def use(data):
        path = tmp_path / "quality.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        monkeypatch.setattr(_quality, "QUALITY_FILE", path)
        _quality._load.cache_clear()

    yield use
    _quality._load.cache_clear()


def manifest(model):
    return RunManifest(suite="s", provider="x", model=model, params={"matcher": "strict"})


def test_the_source_that_fits_a_model():
    assert source_for_model(EMBEDDED_MODEL) == "embedded_run"
    assert source_for_model("gpt-4o-mini") == "capable_run"
    assert source_for_model("SmolLM2-360M-Instruct") == "capable_run"


def test_an_embedded_run_uses_the_embedded_pairs_and_says_so(quality_file):
    quality_file(QUALITY)
    q = matcher_info(manifest(EMBEDDED_MODEL), 0)["matcher_quality"]
    assert (q.pair_source, q.fits, q.fits_pairs) == (
        "embedded_run",
        "embedded_run",
        {"en": 30, "zh": 30},
    )
    assert q.of("en").precision.num == 10 and q.of("en").precision.den == 20
    line = matcher_line(RunSummary(matcher="strict", model=EMBEDDED_MODEL, matcher_quality=q))
    assert (
        "measured on the embedded_run pairs of the test part of bench.jsonl (100 judged "
        "pairs), the source that fits the run's model: en precision 0.50"
    ) in line
    assert "en precision 0.50" in line and "pooled" not in line


def test_a_source_with_too_few_pairs_falls_back_to_the_pooled_figures(quality_file):
    quality_file(QUALITY)
    q = matcher_info(manifest("gpt-4o-mini"), 0)["matcher_quality"]
    assert (q.pair_source, q.fits, q.fits_pairs) == (None, "capable_run", {"en": 29, "zh": 29})
    assert q.source == QUALITY["source"] and q.of("zh").recall.num == 80
    line = matcher_line(RunSummary(matcher="strict", matcher_quality=q), plain=True)
    assert (
        "measured on the test part of bench.jsonl (500 judged pairs), all sources pooled: "
        "the capable_run pairs that fit the run's model are fewer than 30 per language "
        "(en 29, zh 29): en precision 0.80"
    ) in line


def test_one_thin_language_is_enough_to_fall_back(quality_file):
    thin = json.loads(json.dumps(QUALITY))
    thin["by_source"]["embedded_run"]["matchers"]["strict"]["zh"]["pairs"] = 3
    quality_file(thin)
    q = matcher_info(manifest(EMBEDDED_MODEL), 0)["matcher_quality"]
    assert q.pair_source is None and q.fits_pairs == {"en": 30, "zh": 3}


def test_a_source_not_measured_at_all_falls_back(quality_file):
    quality_file({k: v for k, v in QUALITY.items() if k != "by_source"})  # an older file
    q = matcher_info(manifest("claude-x"), 0)["matcher_quality"]
    assert q.pair_source is None and q.fits_pairs == {"en": 0, "zh": 0}
    assert "(en 0, zh 0)" in matcher_line(RunSummary(matcher="strict", matcher_quality=q))


def test_the_corrected_recall_uses_the_chosen_figures(quality_file):
    quality_file(QUALITY)
    langs = {
        lang: BreakdownGroup.model_validate(
            {"cases": 1, "fact_recall": {"value": 0.2, "ci": [0.15, 0.25], "den": 100}}
        )
        for lang in ("en", "zh")
    }
    embedded = matcher_info(manifest(EMBEDDED_MODEL), 0)["matcher_quality"]
    pooled = matcher_info(manifest("gpt-4o-mini"), 0)["matcher_quality"]
    # embedded_run: precision 10/20, recall 10/15; pooled: 80/100 and 80/100.
    assert corrected_recall(langs, embedded).value == pytest.approx(0.2 * 0.5 / (10 / 15))
    assert corrected_recall(langs, pooled).value == pytest.approx(0.2)


def test_a_summary_from_before_sources_reads_as_it_did(quality_file):
    quality_file(QUALITY)
    old = _quality.quality_of("strict")  # no model: a comparison's line, or an old summary
    assert old is not None and old.fits is None and old.pair_source is None
    line = matcher_line(RunSummary(matcher="strict", matcher_quality=old), plain=True)
    assert "measured on the test part of bench.jsonl (500 judged pairs): en precision" in line


def test_the_committed_figures_give_the_embedded_model_its_own_pairs():
    _quality._load.cache_clear()
    data = json.loads(_quality.QUALITY_FILE.read_text(encoding="utf-8"))
    q = matcher_info(manifest(EMBEDDED_MODEL), 0)["matcher_quality"]
    assert q.pair_source == "embedded_run"
    assert q.source == data["by_source"]["embedded_run"]["source"]
    en = json.loads(json.dumps(q.of("en").to_data()))
    assert en == data["by_source"]["embedded_run"]["matchers"]["strict"]["en"]


def test_the_judges_line_says_its_figures_belong_to_its_model():
    # The judge's precision and recall are measured for one model (docs/metrics.md), not
    # "not measured": the line says where they are instead of denying them.
    assert _quality.quality_of("judge", "claude") is None
    line = _quality.quality_text("judge", None)
    assert "depend on its model" in line and "docs/metrics.md" in line
    assert _quality.quality_text("keyword", None).endswith("not measured on the benchmark")

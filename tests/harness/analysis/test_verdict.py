"""A comparison in one line: what is significantly better or worse after
Holm, what the suite cannot tell at its MDE, and which prompt files differ; in the
terminal text and on the page."""

from types import SimpleNamespace

from hy_eval.harness.analysis._outcomes import prompts_changed
from hy_eval.harness.report import comparison_text
from hy_eval.harness.report._verdict import prompts_line, verdict_line
from hy_eval.harness.runlog import Comparison


def _comparison(**metrics):
    rows = {
        name: {
            "diff": diff,
            "significant": sig,
            "mde": mde,
            "higher_is_better": hib,
            "a": 0.5,
            "b": 0.5 + diff,
            "p_value": 0.01 if sig else 0.5,
            "ci": (-0.1, 0.1),
        }
        for name, (diff, sig, mde, hib) in metrics.items()
    }
    return Comparison.model_validate({"a": "A", "b": "B", "metrics": rows})


def test_the_verdict_names_what_is_better_worse_and_too_small_to_tell():
    result = _comparison(
        case_pass=(0.02, False, 0.193, True),
        attribution_accuracy=(-0.12, True, 0.08, True),
        misattribution_rate=(-0.05, True, 0.03, False),  # a rate going down: better
        fact_recall=(0.01, False, 0.133, True),
    )
    line = verdict_line(result)
    assert line == (
        "Verdict: B is better on misattribution_rate (-0.050); B is worse on "
        "attribution_accuracy (-0.120); nothing else differs significantly (Holm-adjusted "
        "p < 0.05); this suite cannot tell differences under the MDE: case_pass 0.193, "
        "fact_recall 0.133"
    )
    assert line in comparison_text(result).splitlines()
    quiet = verdict_line(_comparison(case_pass=(0.0, False, None, True)))
    assert quiet == "Verdict: no metric differs significantly (Holm-adjusted p < 0.05)"


def test_the_prompt_files_that_differ_are_listed():
    def run(hashes):
        return SimpleNamespace(meta=SimpleNamespace(prompt_hashes=hashes))

    base = {"_layout.j2": "l", "default/extract.en.j2": "e1", "default/extract.zh.j2": "z1"}
    variant = {**base, "v/extract.en.j2": "e2"}  # extends default's English file
    assert prompts_changed(run(base), run(variant)) == ["extract.en.j2"]
    assert prompts_changed(run(base), run(dict(base))) == []
    assert prompts_changed(run(base), run({})) is None
    result = Comparison.model_validate({"a": "A", "b": "B", "prompts_changed": ["extract.en.j2"]})
    assert prompts_line(result) == "Prompt files that differ: extract.en.j2."
    assert "Prompt files that differ: extract.en.j2." in comparison_text(result)
    assert prompts_line(Comparison.model_validate({"a": "A", "b": "B"})) is None


def test_the_page_shows_the_verdict_first(tmp_path):
    from hy_eval.harness.analysis import compare, run_outcomes
    from hy_eval.harness.report import write_compare_page
    from tests.harness.generated_runs import write_pair

    run_a, run_b = write_pair(tmp_path, cases=40, changed=20)
    result = compare(run_outcomes(run_a), run_outcomes(run_b))
    page = write_compare_page(tmp_path / "c.html", result, run_a, run_b).read_text("utf-8")
    head = page[: page.index('id="metrics"')]
    assert '<p id="verdict"><strong>Verdict: ' in head

"""A comparison in one line, for the terminal, the comparison page and the matrix table:
what is significantly better or worse after Holm's adjustment, what the suite cannot
tell at its MDE, and which prompt files differ between the runs."""

from __future__ import annotations

from hy_eval.harness.runlog import Comparison

#: The metrics whose MDE the verdict names when they are not significant: the ones a
#: prompt decision is read from first.
HEADLINE = ("case_pass", "fact_recall", "attribution_accuracy", "misattribution_rate")


def verdict_line(result: Comparison) -> str:
    """``Verdict: B is worse on attribution_accuracy (-0.120); nothing else differs
    significantly (Holm-adjusted p < 0.05); too small to tell here: differences under
    the MDE (case_pass 0.193, ...)``."""
    better: list[str] = []
    worse: list[str] = []
    for name, e in result.metrics.items():
        if not e.significant or e.diff is None:
            continue
        improved = (e.diff > 0) == e.higher_is_better
        (better if improved else worse).append(f"{name} ({e.diff:+.3f})")
    parts = []
    if better:
        parts.append("B is better on " + ", ".join(better))
    if worse:
        parts.append("B is worse on " + ", ".join(worse))
    rest = "nothing else differs" if parts else "no metric differs"
    text = "Verdict: " + "; ".join([*parts, rest]) + " significantly (Holm-adjusted p < "
    text += f"{result.alpha:g})"
    unseen = []
    for name in HEADLINE:
        entry = result.metrics.get(name)
        if entry is not None and not entry.significant and entry.mde is not None:
            unseen.append(f"{name} {entry.mde:.3f}")
    if unseen:
        text += "; this suite cannot tell differences under the MDE: " + ", ".join(unseen)
    return text


def prompts_line(result: Comparison) -> str | None:
    """``Prompt files that differ: extract.en.j2, extract.zh.j2`` (or that none does);
    None when a run does not record its prompts."""
    changed = result.prompts_changed
    if changed is None:
        return None
    if not changed:
        return "Prompt files: the same in A and B."
    return "Prompt files that differ: " + ", ".join(changed) + "."

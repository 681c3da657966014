"""The words of a comparison (``compare``'s result), for the terminal and the page.

The terminal text (:func:`comparison_text`) and the comparison page
(``_compare_page.py``) take their sentences from the functions here, so that both say
the same thing with the same numbers. Two words are used in one sense each:

- **flipped**: the case's pass/fail verdict differs between the runs (fixed by B or
  broken by B); these are the discordant cases of McNemar's test;
- **changed**: at least one of the case's check verdicts differs (a superset of the
  flipped cases: a flipped case counts as changed too).

The A and B of the metric table are each run's value on the ``n`` shared cases that
count for that metric in both runs, so they can differ from a run's own headline (its
``summary.json``, over all its cases); :func:`own_value_lines` names every such metric.
"""

from __future__ import annotations

from hy_eval._terminal import neutralise
from hy_eval.harness.report._verdict import prompts_line, verdict_line
from hy_eval.harness.runlog import Comparison, OwnValue
from hy_eval.harness.scoring import matcher_text


def _num(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def p_text(p: float | None) -> str:
    """A p-value as the terminal and the page print it: ``< 0.001`` below 0.001 (the
    permutation test's floor is about 0.001, which four decimals would print as 0.0010,
    as if measured; McNemar's exact p of many flips would print as 0.0000), else four
    decimals. The numbers in ``--json`` are not rounded."""
    if p is None:
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.4f}"


def _p_is(p: float | None) -> str:
    """``= 0.0123`` or ``< 0.001``: a p-value after its name in a sentence."""
    text = p_text(p)
    return text if text.startswith("<") else "= " + text


def _cases(n: int) -> str:
    return f"{n} case" if n == 1 else f"{n} cases"


def header_line(result: Comparison) -> str:
    """What is compared, and on which cases."""
    only = ""
    if result.only_in_a or result.only_in_b:
        only = f" ({result.only_in_a} only in A, {result.only_in_b} only in B)"
    return f"B = {result.b} vs A = {result.a} on {result.cases} shared cases{only}"


#: What the A, B and n columns hold, said above the table on the terminal and the page.
SHARED_NOTE = "A and B are on the n shared cases that count for the metric in both runs"


def own_value_lines(result: Comparison) -> list[str]:
    """For each metric whose shared set is smaller than a run's own (so its A or B may
    differ from that run's headline in its summary.json), each run's own value and n."""
    rows = []
    for m, e in result.metrics.items():
        if e.own is None:
            continue
        a, b, n = e.own.a, e.own.b, e.n
        if a.n > n or b.n > n:
            rows.append(
                f"  {m}: A {_own(a)} on {_cases(a.n)}, "
                f"B {_own(b)} on {_cases(b.n)} (n {n} in the table)"
            )
    if not rows:
        return []
    return [
        "each run's own headline (its summary.json, all its cases) where the shared cases "
        "are fewer:",
        *rows,
    ]


def _own(value: OwnValue) -> str:
    """A run's own value; n/m when its system cannot expose the metric."""
    return "n/m" if value.not_measured else _num(value.value, ".3f")


def verdict_lines(result: Comparison) -> list[str]:
    """The counts of flipped and changed cases, with McNemar's test on the flipped ones."""
    mc = result.mcnemar
    lines = [
        f"flipped (pass/fail verdict changed): {_cases(result.flipped_count)}, {mc.fixed} fixed "
        f"by B, {mc.broken} broken by B; McNemar exact p {_p_is(mc.p_value)}"
        + (f" (Holm-adjusted {p_text(result.p_holm)})" if result.p_holm is not None else "")
    ]
    if result.changed_count is not None:
        lines.append(
            f"changed (at least one check's verdict changed, flipped ones included): "
            f"{_cases(result.changed_count)}"
        )
    return lines


def _metric_table(result: Comparison, level: int) -> list[str]:
    lines = [
        SHARED_NOTE + ":",
        f"{'metric':<30}{'n':>5}{'A':>7}{'B':>7}{'B-A':>8}  {f'{level}% CI':<18}"
        f"{'p':>7}{'p_holm':>8}{'MDE':>7}",
    ]
    for m, e in result.metrics.items():
        if e.diff is None or e.a is None or e.b is None or e.p_value is None:
            continue
        lo, hi = e.ci
        star = " *" if e.significant else ""
        ci = f"[{lo:+.3f}, {hi:+.3f}]"
        p_holm = e.p_adjusted if e.p_adjusted is not None else e.p_value
        lines.append(
            f"{m:<30}{e.n:>5}{e.a:>7.3f}{e.b:>7.3f}{e.diff:>+8.3f}  {ci:<18}"
            f"{p_text(e.p_value):>7}{p_text(p_holm):>8}{_num(e.mde, '.3f'):>7}{star}"
        )
    return lines


def comparison_text(result: Comparison) -> str:
    """The terminal text of a comparison: the metric table on the shared cases, each
    run's own values where they differ, the flipped and changed cases, consistency."""
    alpha = result.alpha
    level = round(100 * result.ci_level)
    lines = [header_line(result), verdict_line(result)]
    prompts = prompts_line(result)
    if prompts:
        lines.append(prompts)
    lines += [*_metric_table(result, level), *own_value_lines(result)]
    flipped, *changed = verdict_lines(result)
    lines.append(flipped)
    for flip in result.flipped[:20]:
        lines.append(f"  {flip.change:<6} {flip.id}")
    if len(result.flipped) > 20:
        lines.append(f"  ... and {len(result.flipped) - 20} more")
    lines += changed
    if result.consistency is not None:
        from hy_eval.harness.report._perturbed import consistency_text

        lines += consistency_text(result.consistency, result.perturbation)
    lines.append(matcher_text(result.matcher))
    lines += [
        f"* = Holm-adjusted p (p_holm) < {alpha:g} across the {result.metrics_tested} metrics "
        "compared; p is unadjusted:",
        "    a two-sided paired permutation test, exact McNemar for case_pass.",
        f"MDE: the difference this suite detects with 80% power at alpha {alpha:g}; "
        "smaller differences are noise here.",
    ]
    # Labels, case ids, tags and rules come from the run folders: each line is made safe
    # for a terminal, its own line breaks included, so no value can forge a line.
    return "\n".join(neutralise(line, keep="") for line in lines)

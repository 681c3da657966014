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

from collections.abc import Mapping
from typing import Any

from hy_eval._terminal import neutralise
from hy_eval.harness.scoring import matcher_text


def _num(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def _cases(n: int) -> str:
    return f"{n} case" if n == 1 else f"{n} cases"


def header_line(result: Mapping[str, Any]) -> str:
    """What is compared, and on which cases."""
    only = ""
    if result.get("only_in_a") or result.get("only_in_b"):
        only = f" ({result.get('only_in_a', 0)} only in A, {result.get('only_in_b', 0)} only in B)"
    return f"B = {result['b']} vs A = {result['a']} on {result['cases']} shared cases{only}"


#: What the A, B and n columns hold, said above the table on the terminal and the page.
SHARED_NOTE = "A and B are on the n shared cases that count for the metric in both runs"


def own_value_lines(result: Mapping[str, Any]) -> list[str]:
    """For each metric whose shared set is smaller than a run's own (so its A or B may
    differ from that run's headline in its summary.json), each run's own value and n."""
    rows = []
    for m, e in result["metrics"].items():
        own = e.get("own") or {}
        a, b = own.get("a") or {}, own.get("b") or {}
        n = e.get("n", 0)
        if a.get("n", 0) > n or b.get("n", 0) > n:
            rows.append(
                f"  {m}: A {_num(a.get('value'), '.3f')} on {_cases(a.get('n', 0))}, "
                f"B {_num(b.get('value'), '.3f')} on {_cases(b.get('n', 0))} (n {n} in the table)"
            )
    if not rows:
        return []
    return [
        "each run's own headline (its summary.json, all its cases) where the shared cases "
        "are fewer:",
        *rows,
    ]


def verdict_lines(result: Mapping[str, Any]) -> list[str]:
    """The counts of flipped and changed cases, with McNemar's test on the flipped ones."""
    mc = result["mcnemar"]
    flipped = result.get("flipped_count", mc["fixed"] + mc["broken"])
    lines = [
        f"flipped (pass/fail verdict changed): {_cases(flipped)}, {mc['fixed']} fixed by B, "
        f"{mc['broken']} broken by B; McNemar exact p = {_num(mc.get('p_value'), '.4f')}"
        + (f" (Holm-adjusted {result['p_holm']:.4f})" if "p_holm" in result else "")
    ]
    changed = result.get("changed_count")
    if changed is not None:
        lines.append(
            f"changed (at least one check's verdict changed, flipped ones included): "
            f"{_cases(changed)}"
        )
    return lines


def _metric_table(result: Mapping[str, Any], level: int) -> list[str]:
    lines = [
        SHARED_NOTE + ":",
        f"{'metric':<30}{'n':>5}{'A':>7}{'B':>7}{'B-A':>8}  {f'{level}% CI':<18}"
        f"{'p':>7}{'p_holm':>8}{'MDE':>7}",
    ]
    for m, e in result["metrics"].items():
        if e["diff"] is None:
            continue
        star = " *" if e["significant"] else ""
        ci = f"[{e['ci'][0]:+.3f}, {e['ci'][1]:+.3f}]"
        lines.append(
            f"{m:<30}{e['n']:>5}{e['a']:>7.3f}{e['b']:>7.3f}{e['diff']:>+8.3f}  {ci:<18}"
            f"{e['p_value']:>7.4f}{e.get('p_adjusted', e['p_value']):>8.4f}"
            f"{_num(e.get('mde'), '.3f'):>7}{star}"
        )
    return lines


def comparison_text(result: Mapping[str, Any]) -> str:
    """The terminal text of a comparison: the metric table on the shared cases, each
    run's own values where they differ, the flipped and changed cases, consistency."""
    alpha = result.get("alpha", 0.05)
    level = round(100 * result.get("ci_level", 1 - alpha))
    lines = [header_line(result), *_metric_table(result, level), *own_value_lines(result)]
    flipped, *changed = verdict_lines(result)
    lines.append(flipped)
    for flip in result["flipped"][:20]:
        lines.append(f"  {flip['change']:<6} {flip['id']}")
    if len(result["flipped"]) > 20:
        lines.append(f"  ... and {len(result['flipped']) - 20} more")
    lines += changed
    if "consistency" in result:
        from hy_eval.harness.report._perturbed import consistency_text

        lines += consistency_text(result["consistency"], result.get("perturbation"))
    lines.append(matcher_text(result.get("matcher")))
    lines += [
        f"* = Holm-adjusted p (p_holm) < {alpha:g} across the {result['metrics_tested']} metrics "
        "compared; p is unadjusted:",
        "    a two-sided paired permutation test, exact McNemar for case_pass.",
        f"MDE: the difference this suite detects with 80% power at alpha {alpha:g}; "
        "smaller differences are noise here.",
    ]
    # Labels, case ids, tags and rules come from the run folders: each line is made safe
    # for a terminal, its own line breaks included, so no value can forge a line.
    return "\n".join(neutralise(line, keep="") for line in lines)

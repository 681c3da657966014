"""The ``history`` suite: L1_RAW texts with their expected parse, scored without a model
(rules H1-H5). Each case passes when the parsed messages, the recovered user name and,
where the case sets ``history_limit``, the history context are exactly as expected."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hy_eval.conversation import ChatMessage, history_context, read_l1_raw
from hy_eval.harness.datasets._schema import DatasetError, HistoryCase, load_suite


@dataclass
class HistoryReport:
    total: int = 0
    passed: int = 0
    by_rule: dict[str, list[int]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        lines = [f"history: {self.passed}/{self.total} cases pass"]
        for rule, (ok, n) in sorted(self.by_rule.items()):
            lines.append(f"  {rule}: {ok}/{n}")
        lines.extend(f"  FAIL {f}" for f in self.failures)
        return "\n".join(lines)


def _expected(items: Any) -> list[ChatMessage]:
    return [ChatMessage(m.role, m.content, m.name) for m in items]


def check_history_case(case: HistoryCase) -> str | None:
    """``None`` when the case holds, else what differs."""
    parsed = read_l1_raw(case.text)
    if parsed.user_name != case.expect.user_name:
        return f"user name {parsed.user_name!r}, expected {case.expect.user_name!r}"
    got = [ChatMessage(m.role, m.content, m.name) for m in parsed.messages]
    want = _expected(case.expect.messages)
    if got != want:
        return f"messages {got!r}, expected {want!r}"
    if case.history_limit is not None and case.expect.context is not None:
        ctx = history_context(got, case.history_limit)
        if ctx != _expected(case.expect.context):
            return f"context {ctx!r}, expected {_expected(case.expect.context)!r}"
    return None


def run_history_suite(name: str = "history") -> HistoryReport:
    try:
        suite = load_suite(name)
    except DatasetError as exc:
        raise ValueError("dataset error: " + "; ".join(exc.problems[:5])) from None
    if suite.kind != "history":
        raise ValueError(f"suite {name!r} is not a history suite")
    report = HistoryReport()
    for case in suite.cases:
        problem = check_history_case(case)
        report.total += 1
        report.passed += problem is None
        for rule in case.rules:
            entry = report.by_rule.setdefault(rule, [0, 0])
            entry[0] += problem is None
            entry[1] += 1
        if problem:
            report.failures.append(f"{case.id}: {problem}")
    return report

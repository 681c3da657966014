"""A short title for each rule id of docs/spec.md, for plots and tables that show rule ids
(rules.png labels its bars with them). The full wording is in docs/spec.md; a test holds
this table to the ids of ``RULE_IDS`` and to the ids the spec defines."""

from __future__ import annotations

RULE_TITLES: dict[str, str] = {
    "M1": "role=user is the current user",
    "M2": "named assistant is a human",
    "M3": "unnamed assistant is the AI",
    "M4": "tool name is no speaker",
    "M5": "OpenAI and Anthropic forms",
    "M6": "only role sets perspective",
    "M7": "clear error for bad input",
    "D1": "plain user-AI rendering",
    "D2": "user renders as [user]",
    "D3": "named assistant as [Name]",
    "D4": "system/tool by their role",
    "D5": "one name line first",
    "D6": "name line in content language",
    "A1": 'user facts say "The user"',
    "A2": "named human is own subject",
    "A3": "assistant content: owner agent",
    "A4": "named human never owner agent",
    "A5": "subject carried in the text",
    "A6": "circle member: speaker's subject",
    "A7": "two subjects, two facts",
    "A8": "subject read back in any form",
    "P1": "L0 is the current user only",
    "P2": "user's name trusted for L0",
    "P3": "others' details not in L0",
    "P4": "no L0 for other humans",
    "R1": "no merge across subjects",
    "R2": "prompt states R1, guard holds it",
    "R3": "unusable answer: ADD only",
    "H1": "L1_RAW in rendered form",
    "H2": "name line read back once",
    "H3": "named labels kept",
    "H4": "split at speaker prefixes only",
    "H5": "only non-user history truncated",
    "E1": "suite of labelled cases",
    "E2": "real pipeline, chosen model",
    "E3": "metrics",
    "E4": "variants compared",
    "E5": "gates on a baseline",
    "E6": "reproducible and cached",
    "E7": "reports",
}


def rule_label(rule: str) -> str:
    """``rule`` with its short title ("A1 user facts say ..."); an id without a title
    (a suite outside docs/spec.md) stays as it is."""
    title = RULE_TITLES.get(rule)
    return f"{rule}  {title}" if title else rule

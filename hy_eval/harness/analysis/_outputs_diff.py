"""What changed between two outputs of one case: used by the comparison of two runs and
by the consistency of a perturbed run (a module of its own, so neither imports the other
for it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def structural_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """What changed between two outputs of one case (facts, owners, operations, L0)."""
    if not a and not b:
        return {}
    from deepdiff import DeepDiff

    diff = DeepDiff(dict(a), dict(b), ignore_order=True, view="text")
    out: dict[str, Any] = json_safe(diff.to_dict())
    return out


def json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)

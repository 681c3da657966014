"""What changed between two outputs of one case: used by the comparison of two runs and
by the consistency of a perturbed run (a module of its own, so neither imports the other
for it)."""

from __future__ import annotations

import re
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
        items = [(str(k), json_safe(v)) for k, v in value.items()]
        if items and all(k.startswith("root") for k, _ in items):
            # Paths of changed items come in an order that follows the process's hash
            # seed when two items tie for a pairing; in path order a diff reads the same
            # in every run.
            items.sort(key=lambda kv: _path_key(kv[0]))
        return dict(items)
    if isinstance(value, (set, frozenset)):
        # A set's iteration order changes with the process's hash seed: sorted, a diff
        # reads the same in every run.
        return sorted((json_safe(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _path_key(path: str) -> list[tuple[int, int | str]]:
    """``root['facts'][10]`` after ``root['facts'][2]``: numbers compare as numbers."""
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", path)]

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


#: How a user names each part of a case's outputs (``outputs_of``'s keys).
PART_WORDS = {
    "facts": "facts",
    "operations": "operations",
    "basic_info": "profile",
    "error": "error",
}
#: deepdiff's kinds of change, in a user's words.
CHANGE_WORDS = {
    "values_changed": "changed",
    "type_changes": "changed",
    "iterable_item_added": "added",
    "dictionary_item_added": "added",
    "set_item_added": "added",
    "iterable_item_removed": "removed",
    "dictionary_item_removed": "removed",
    "set_item_removed": "removed",
}


def diff_words(diff: Mapping[str, Any]) -> str:
    """A structural diff in a user's words: ``facts: 2 changed, 1 removed; profile
    changed; operations: 1 removed`` (deepdiff's ``iterable_item_removed`` and its
    ``root['facts'][2]`` paths counted per part of the outputs)."""
    counts: dict[str, dict[str, int]] = {}
    for kind, paths in diff.items():
        word = CHANGE_WORDS.get(kind, "changed")
        for path in paths if isinstance(paths, (dict, list)) else [paths]:
            found = re.match(r"root\['([^']+)'\](\[)?", str(path))
            part = PART_WORDS.get(found.group(1), found.group(1)) if found else "outputs"
            indexed = bool(found and found.group(2))
            key = part if indexed else f"{part}\0"  # a whole part: "profile changed"
            bucket = counts.setdefault(key, {})
            bucket[word] = bucket.get(word, 0) + 1
    out = []
    for key, words in counts.items():
        part, whole = key.rstrip("\0"), key.endswith("\0")
        if whole:
            out.append(f"{part} " + ", ".join(sorted(words)))
        else:
            out.append(f"{part}: " + ", ".join(f"{n} {w}" for w, n in sorted(words.items())))
    return "; ".join(sorted(out)) or "-"

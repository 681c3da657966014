"""Cassettes: cached model answers as a diffable text file (JSON lines, sorted by key),
so CI can replay a suite with no model and fail when a prompt changes.

``export_cassette`` writes the cache rows of the given keys; ``import_cassette`` loads a
cassette into a cache file. Rows hold the key fields and the answer, never API keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hy_eval._files import replace_file
from hy_eval.llm.cache._cache import AnswerCache, cache_key, completion_from_json


def export_cassette(cache: AnswerCache, keys: Iterable[str], path: str | Path) -> int:
    wanted = set(keys)
    lines = []
    for key, request, completion in cache.rows():
        if key in wanted:
            lines.append(
                json.dumps(
                    {
                        "key": key,
                        "request": json.loads(request),
                        "completion": json.loads(completion),
                    },
                    ensure_ascii=False,
                    sort_keys=True,
                )
            )
    missing = wanted - {json.loads(line)["key"] for line in lines}
    if missing:
        raise KeyError(f"{len(missing)} answer(s) not in the cache, e.g. {sorted(missing)[0][:16]}")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    replace_file(out, "\n".join(lines) + "\n")
    return len(lines)


def cassette_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """A cassette's rows as (line number, row), blank lines left out; ``ValueError``
    naming the file and line for a line that is not a JSON object with a ``key``."""
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict) or "key" not in row:
                    raise ValueError("not an object with a key")
            except ValueError as exc:
                raise ValueError(f"{path}:{lineno}: not a cassette row ({exc})") from None
            yield lineno, row


def import_cassette(path: str | Path, cache: AnswerCache) -> int:
    count = 0
    for lineno, row in cassette_rows(path):
        try:
            completion = completion_from_json(json.dumps(row["completion"]))
            if cache_key(row["request"]) != row["key"]:
                raise ValueError("the key does not match the request fields")
            cache.put(row["key"], row["request"], completion)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{lineno}: not a cassette row ({exc})") from None
        count += 1
    return count

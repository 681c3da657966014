"""The English-Chinese lexicon of the ``strict`` matcher's other-language pairs
(``data/lexicon_en_zh.txt``, which says what it holds and how it is read).

A gold fact's keywords are in its own language; a prediction in the other language
cannot hold them as written. For such a pair a keyword item is also found when the
prediction holds one of the item's forms in the other language, as the lexicon gives
them: "plumber" is found in "Tomasz是一名水管工", 胃镜 in "is having a gastroscopy".
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from hy_eval.harness.datasets import fold_spaced

_PATH = Path(__file__).with_name("data") / "lexicon_en_zh.txt"


@lru_cache(maxsize=1)
def _table() -> dict[str, frozenset[str]]:
    """Each form, folded, and the forms of the other language it translates to."""
    out: dict[str, set[str]] = {}
    for line in _PATH.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        english, chinese = (
            [fold_spaced(f) for f in side.split(",") if f.strip()] for side in line.split("|", 1)
        )
        for form in english:
            out.setdefault(form, set()).update(chinese)
        for form in chinese:
            out.setdefault(form, set()).update(english)
    return {form: frozenset(other) for form, other in out.items()}


def translations(keyword: str) -> frozenset[str]:
    """The other language's forms of a keyword (a leading ``=`` ignored), or none."""
    return _table().get(fold_spaced(keyword.removeprefix("=")), frozenset())

"""The embedding stand-in of ``hy-eval serve``: hashed word and character n-grams.

Offline there is no embedding model, and the external memory systems evaluated through
``hy-eval serve`` need vectors to store and search their memories. This is a
deterministic stand-in, not a model: a text is folded (NFKC, case-folded), cut into
words (runs of letters and digits; a run of Chinese characters is one word), and each
word and each character bigram and trigram of the word (with a space on either side)
is hashed (BLAKE2b) to one of ``dimensions`` slots with a sign; the signed counts are
L2-normalised. Texts that share words or pieces of words come out close in cosine
similarity, which is what keyword-like retrieval needs; synonyms and translations do not.

It is the same vector for the same text and dimension count on every machine and
Python version (no randomised ``hash``, no floating-point reductions in an order that
could change). :data:`EMBEDDING_MODEL` names it, with a version: a change to the
features must change that name, since stored vectors would no longer match new ones.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata

#: The model id the stand-in answers under (in ``/v1/models`` and every response).
EMBEDDING_MODEL = "hy-eval-stand-in-hashed-ngrams-v1"
#: text-embedding-3-small's size, which clients written for OpenAI tend to assume.
DEFAULT_DIMENSIONS = 1536
MAX_DIMENSIONS = 8192

_WORD_RE = re.compile(r"\w+")
#: Weights of the features: a whole word counts most, its pieces less.
_WORD_WEIGHT = 1.0
_PIECE_WEIGHT = 0.5


def fold(text: str) -> str:
    """``text`` as the features see it: NFKC (full-width letters become ASCII), case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def features(text: str) -> dict[str, float]:
    """The weighted features of ``text``: ``w:`` and each word, ``g:`` and each character
    bigram and trigram of `` word ``. A text without words (punctuation only) counts its
    characters; an empty text has no feature."""
    found: dict[str, float] = {}
    words = _WORD_RE.findall(fold(text))
    for word in words:
        found["w:" + word] = found.get("w:" + word, 0.0) + _WORD_WEIGHT
        padded = f" {word} "
        for n in (2, 3):
            for i in range(len(padded) - n + 1):
                piece = "g:" + padded[i : i + n]
                found[piece] = found.get(piece, 0.0) + _PIECE_WEIGHT
    if not words:
        for char in fold(text).strip():
            if not char.isspace():
                found["c:" + char] = found.get("c:" + char, 0.0) + _WORD_WEIGHT
    return found


def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    """The slot and sign of ``feature`` (BLAKE2b: the same on every machine)."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return digest % dimensions, (1.0 if digest >> 63 else -1.0)


def hashed_embedding(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The stand-in's unit vector of ``dimensions`` floats for ``text``. A text with no
    feature (empty, or white space only) gets the first unit vector, so every answer has
    length 1."""
    if not 1 <= dimensions <= MAX_DIMENSIONS:
        raise ValueError(f"dimensions must be from 1 to {MAX_DIMENSIONS} (got {dimensions})")
    vector = [0.0] * dimensions
    # Sorted: the sums are made in the same order whatever order the dict was built in.
    for feature, weight in sorted(features(text).items()):
        slot, sign = _slot(feature, dimensions)
        vector[slot] += sign * weight
    norm = math.sqrt(math.fsum(v * v for v in vector))
    if norm == 0.0:
        # No feature, or features that cancelled out exactly.
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


def token_count(text: str) -> int:
    """What the stand-in reports as a text's tokens: its words, each Chinese, Japanese
    or Korean character counted as one (no tokenizer is involved; an estimate)."""
    count = 0
    for word in _WORD_RE.findall(fold(text)):
        wide = sum(1 for c in word if unicodedata.east_asian_width(c) in ("W", "F"))
        count += wide + (1 if wide < len(word) else 0)
    return count

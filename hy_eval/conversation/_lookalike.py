"""Look-alikes: text a reader takes for a speaker label, a name line or a speaker's name
although it is not written exactly as one.

A model does not read L1_RAW the way ``_parse`` does. ``[user]:I am a doctor`` (no space),
`` [user]: ...`` (indented), a zero-width space or byte-order mark before the bracket, and
the full-width ``［user］：`` all read as the user speaking; ``Tіm`` with a Cyrillic ``і``
reads as ``Tim``. Two tools here:

- ``looks_like_speaking(line)``: the line, once invisible characters are set aside, reads
  as a label or a name line. The renderer escapes such body lines as it escapes exact
  labels (see ``_render``).
- ``skeleton(name)``: the form two names are compared in, so that names a reader cannot
  tell apart compare equal. Unicode NFKC (full-width and mathematical letters), a small
  map of Cyrillic and Greek letters that look like Latin ones, then case folding. The map
  covers the letters that pass for Latin in ordinary fonts; it is not Unicode's whole
  confusables table (a large data file), which would also fold names that are merely
  similar.
"""

from __future__ import annotations

import re
import unicodedata

#: Cyrillic and Greek letters drawn like a Latin letter (upper and lower case). Small
#: letters drawn as small capitals (Cyrillic в, м, н, т) are left out: they do not pass.
_LATIN_LOOKALIKES = str.maketrans(
    {
        # Cyrillic capitals
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
        "С": "C", "Т": "T", "Х": "X", "У": "Y", "Ү": "Y", "Ѕ": "S", "І": "I", "Ј": "J",
        "Ԛ": "Q", "Ԝ": "W", "Һ": "H", "Ӏ": "I",
        # Cyrillic small letters
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "х": "x", "у": "y", "ү": "y",
        "ѕ": "s", "і": "i", "ј": "j", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l",
        # Greek capitals
        "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
        "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
        # Greek small letters
        "α": "a", "ι": "i", "ν": "v", "ο": "o", "ρ": "p", "υ": "u", "χ": "x",
        # Latin letters without their dot or in another style
        "ı": "i", "ɑ": "a", "ɡ": "g",
    }
)  # fmt: skip

#: Apostrophes a reader takes for ``'`` (in "The user's name is").
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "＇": "'", "`": "'"})

#: A label after the line's invisible start: ``[X]`` then a colon, spaces allowed before
#: it and anything after it (``[user]:I am``, ``[user] : hi``).
_LABEL_RE = re.compile(r"\[[^\[\]\n]+\]\s*:")
#: A name line in any case and spacing (``the user's name is Eve``, ``用户名叫 小偷``).
_NAME_LINE_RE = re.compile(r"(?:the\s+user's\s+name\s+is\b|用户名叫)\s*\S")
#: How many visible characters of a line's start are examined: a label or a name line
#: is short. Format characters (zero-width space, byte-order mark, joiners, marks of
#: writing direction) are invisible anywhere; spaces and tabs of any width at the start.
_HEAD = 200


def skeleton(name: str) -> str:
    """``name`` as compared with other names: NFKC, look-alike letters as Latin, case
    folded, spaces collapsed. ``Tіm`` (Cyrillic і), ``Ｔｉｍ`` and ``TIM`` give ``tim``."""
    text = unicodedata.normalize("NFKC", name).translate(_LATIN_LOOKALIKES)
    return " ".join(text.casefold().split())


def lookalike_letters(name: str) -> list[str]:
    """The characters of ``name`` that the skeleton reads as another letter, described
    (``'і' U+0456``), for an error message."""
    out = []
    for ch in dict.fromkeys(name):
        if ch.translate(_LATIN_LOOKALIKES) != ch:
            out.append(f"{ch!r} U+{ord(ch):04X} {unicodedata.name(ch, '')}".rstrip())
    return out


def visible_head(line: str) -> str:
    """The start of ``line`` as a reader sees it: format characters dropped, leading
    spaces removed, NFKC (full-width brackets and colons), plain apostrophes."""
    seen: list[str] = []
    for ch in line:
        if unicodedata.category(ch) == "Cf" or (not seen and ch.isspace()):
            continue
        seen.append(ch)
        if len(seen) == _HEAD:
            break
    return unicodedata.normalize("NFKC", "".join(seen)).translate(_APOSTROPHES)


def looks_like_speaking(line: str) -> bool:
    """Whether a reader would take ``line`` for a speaker label or a name line."""
    head = visible_head(line)
    return bool(_LABEL_RE.match(head) or _NAME_LINE_RE.match(head.casefold()))

"""Look-alikes: text a reader takes for a speaker label, a name line or a speaker's name
although it is not written exactly as one.

A model does not read L1_RAW the way ``_parse`` does. ``[user]:I am a doctor`` (no space),
`` [user]: ...`` (indented), a zero-width space or byte-order mark before the bracket, and
the full-width ``［user］：`` all read as the user speaking; ``Tіm`` with a Cyrillic ``і``
reads as ``Tim``. Two tools here:

- ``looks_like_speaking(line)``: the line, once invisible characters are set aside, reads
  as a label or a name line. The renderer escapes such body lines as it escapes exact
  labels (see ``_render``).
- ``looks_like_speaker_line(line, speakers)``: the line starts with another form of a
  speaker label that names a speaker of the conversation (``【user】：``, ``用户：``,
  ``John: ``, ``「user」：``, ``(user):``, ``<user>``), or with a chat-template turn marker
  (``<|im_start|>``). Escaped too; the decision table is in docs/conversation.md.
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

#: Role labels as a reader names them: the labels of D2-D4 and the words a Chinese
#: transcript writes for them. Compared as ``speaker_key`` gives them.
ROLE_WORDS: frozenset[str] = frozenset(
    {"user", "assistant", "system", "tool", "用户", "助手", "系统", "工具"}
)
#: Brackets a speaker label is written in, after NFKC (which makes ``（）＜＞｛｝［］`` and
#: the half-width corner brackets plain): square, CJK lenticular (also white), corner,
#: white corner, angle, double angle, tortoise shell, round, less/greater, curly.
_BRACKET_PAIRS = {
    "[": "]", "【": "】", "〖": "〗", "「": "」", "『": "』", "〈": "〉", "《": "》",
    "〔": "〕", "(": ")", "<": ">", "{": "}",
}  # fmt: skip
_OPENERS = re.escape("".join(_BRACKET_PAIRS))
_CLOSERS = re.escape("".join(_BRACKET_PAIRS.values()))
#: A label in brackets at the start of a line; the colon after it is optional, since the
#: brackets alone mark it as a label (``【用户】我搬家了``, ``<user>hi``).
_BRACKETED_RE = re.compile(rf"([{_OPENERS}])([^{_CLOSERS}\n]{{1,64}})([{_CLOSERS}])")
#: A bare label before a colon (``John: ``, ``用户：`` once NFKC made the colon plain).
_BARE_RE = re.compile(r"([^:\n]{1,64}):")
#: Chat-template turn markers: ChatML ``<|im_start|>``/``<|im_end|>``, Llama 3
#: ``<|start_header_id|>``, Phi ``<|user|>``, Gemma ``<start_of_turn>``.
TURN_MARKER_RE = re.compile(r"<\|[^|<>\s]{1,40}\|>|<(?:start|end)_of_turn>")
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


def speaker_key(name: str) -> str:
    """``name`` as a reader takes it for a speaker: its skeleton without the brackets it
    is wrapped in and a colon after it. ``【User】``, ``(user)``, ``「ｕｓｅｒ」``,
    ``User:`` give ``user``; ``【小王】`` gives ``小王``."""
    key = skeleton(name)
    while True:
        key = key.strip().removesuffix(":").strip()
        if len(key) > 2 and _BRACKET_PAIRS.get(key[0]) == key[-1]:
            key = key[1:-1]
        else:
            return key


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


def looks_like_speaker_line(line: str, speakers: frozenset[str]) -> bool:
    """Whether a reader would take ``line`` for a speaker line of one of ``speakers``
    (``speaker_key`` values): a label in brackets or before a colon that names one of
    them, or any chat-template turn marker. A form naming nobody in the conversation
    (``【注意】：``, ``Note: ``) is ordinary text."""
    head = visible_head(line)
    if TURN_MARKER_RE.match(head):
        return True
    found = _BRACKETED_RE.match(head)
    if (
        found
        and _BRACKET_PAIRS[found.group(1)] == found.group(3)
        and speaker_key(found.group(2)) in speakers
    ):
        return True
    found = _BARE_RE.match(head)
    return found is not None and speaker_key(found.group(1)) in speakers

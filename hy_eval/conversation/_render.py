"""Rendering a conversation to the L1_RAW text form (rules D1-D6, H1).

Format, one message per line group::

    The user's name is Tim          <- D5: only when the user has a name; once, first
    [user]: I work at Stripe.       <- D2: role=user is always [user]
    [John]: I am a nurse in Berlin. <- D3: a named human on role=assistant

A body line (any line of a message after its first) that could be read back as a label
or a name line is escaped with one leading backslash, so content can never change who
is speaking when the text is parsed again (see ``hy_eval.conversation._parse``). So is
a body line that a model would read as one although parsing would not: ``[user]:x``
without the space, an indented label, a zero-width space or byte-order mark before the
bracket, full-width ``［user］：`` (``_lookalike.looks_like_speaking``). So is a body line
that starts with another form of a label naming a speaker of the conversation (a role
label in English or Chinese, the user's name, a named human's name): ``【user】：``,
``用户：``, ``John: ``, ``「user」：``, ``(user):``, ``<user>``; or with a chat-template turn
marker such as ``<|im_start|>`` (``_lookalike.looks_like_speaker_line``). Which forms and
why: docs/conversation.md, "Other speaker-label forms". A
"line" ends at every separator ``str.splitlines`` knows (``\\r``, ``\\v``, ``\\f``,
``\\x1c``-``\\x1e``, ``\\x85``, U+2028, U+2029, ``\\r\\n``, ``\\n``), since a model may
read any of them as a line break; the separators themselves are kept.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from hy_eval.conversation._lookalike import (
    ROLE_WORDS,
    looks_like_speaker_line,
    looks_like_speaking,
    speaker_key,
)
from hy_eval.conversation._messages import ChatMessage

Language = Literal["en", "zh"]

NAME_LINE = {"en": "The user's name is {name}", "zh": "用户名叫{name}"}

#: A line that parsing would take for a speaker label: ``[X]:`` at the start of a line.
LABEL_LINE_RE = re.compile(r"^\[([^\[\]\n]+)\]:(?: |$)")
#: A line that parsing would take for the name line.
NAME_LINE_RE = re.compile(r"^(?:The user's name is |用户名叫)(\S.*)$")
#: Every line separator of ``str.splitlines``, ``\r\n`` first so that it stays one
#: separator. ``re.split`` with this (capturing) pattern keeps the separators.
LINE_SEPARATOR_RE = re.compile("(\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])")
_ESCAPABLE_RE = re.compile(r"^\\*(?:\[[^\[\]\n]+\]:(?: |$)|The user's name is \S|用户名叫\S)")


def is_cjk(ch: str) -> bool:
    """True for CJK ideographs (Han), the characters that mark Chinese text."""
    code = ord(ch)
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0xF900 <= code <= 0xFAFF
    )


def detect_language(texts: Sequence[str] | str) -> Language:
    """``"zh"`` when the text is mostly Chinese, else ``"en"`` (D6).

    One Han character carries about as much as one English word, so the rule compares
    the number of Han characters with the number of Latin-letter words: Chinese wins when
    it has strictly more. ``我在 Stripe 工作。`` (4 Han, 1 word) is Chinese; ``My friend
    王伟 lives in Beijing`` (2 Han, 5 words) is English. A tie or empty text is English.
    """
    han, words = language_counts(texts)
    return "zh" if han > words else "en"


def language_counts(texts: Sequence[str] | str) -> tuple[int, int]:
    """``(Han characters, Latin-letter words)`` of ``texts``, what :func:`detect_language`
    compares. Each text counts on its own, so the counts of several texts add up: a
    caller may sum them over parts of a conversation instead of counting it again.

    A word is a run of Latin letters (ASCII letters, and letters below U+0250: é, ß, ł);
    anything else, a Han character included, ends it. Both counts are regular-expression
    scans (a loop over characters in Python cost a third of a millisecond a message)."""
    if isinstance(texts, str):
        texts = [texts]
    han = 0
    words = 0
    for text in texts:
        han += len(_HAN_RE.findall(text))
        words += len(_LATIN_WORD_RE.findall(text))
    return han, words


#: One Han character (``is_cjk``'s ranges).
_HAN_RE = re.compile("[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\uf900-\ufaff]")
#: A run of Latin letters: ASCII letters and the letters (category L) below U+0250.
_LATIN_WORD_RE = re.compile(
    "["
    + "".join(
        re.escape(chr(c))
        for c in range(0x250)
        if (chr(c).isascii() and chr(c).isalpha())
        or (c > 0x7F and unicodedata.category(chr(c)).startswith("L"))
    )
    + "]+"
)


def conversation_language(messages: Sequence[ChatMessage]) -> Language:
    """The language of a conversation, from its messages' content only (not names)."""
    return detect_language([m.content for m in messages])


@dataclass(frozen=True)
class UserName:
    """The current user's name, resolved from ``role=user`` messages.

    Rule: the first ``role=user`` message that carries a name fixes it. Later user
    messages with a different name do not change it (the caller fixes one perspective,
    M6); each such name is listed in ``conflicts`` so a caller can report it.
    """

    name: str | None
    conflicts: tuple[str, ...] = ()


def resolve_user_name(messages: Sequence[ChatMessage]) -> UserName:
    name: str | None = None
    conflicts: list[str] = []
    for m in messages:
        if m.role != "user" or m.name is None:
            continue
        if name is None:
            name = m.name
        elif m.name != name and m.name not in conflicts:
            conflicts.append(m.name)
    return UserName(name, tuple(conflicts))


def speaker_label(message: ChatMessage) -> str:
    """The label of a message: D2 (user), D3 (named human / assistant), D4 (system, tool)."""
    if message.role == "assistant" and message.name is not None:
        return message.name
    return message.role


def speakers_of(messages: Sequence[ChatMessage]) -> frozenset[str]:
    """The speakers a rendering of ``messages`` names, as ``speaker_key`` gives them: the
    role labels in English and Chinese, the user's name of the name line and every
    label. Exactly what ``_parse`` finds again in the rendered text, so that escaping and
    unescaping agree."""
    keys = set(ROLE_WORDS)
    keys.update(speaker_key(speaker_label(m)) for m in messages)
    user = resolve_user_name(messages).name
    if user is not None:
        keys.add(speaker_key(user))
    return frozenset(keys)


def _escapable(line: str, speakers: frozenset[str]) -> bool:
    """Whether a body line, after any leading backslashes, reads as a label or a name line
    to parsing (exactly) or to a model (a look-alike, or another form of a label naming
    one of ``speakers``). Leading backslashes do not count, so escaping and unescaping
    agree: ``\\`` + line is escapable exactly when line is."""
    bare = line.lstrip("\\")
    return (
        bool(_ESCAPABLE_RE.match(line))
        or looks_like_speaking(bare)
        or looks_like_speaker_line(bare, speakers)
    )


def escape_body_line(line: str, speakers: frozenset[str] = ROLE_WORDS) -> str:
    """Add one backslash to a body line that would otherwise be read as a label."""
    return "\\" + line if _escapable(line, speakers) else line


def unescape_body_line(line: str, speakers: frozenset[str] = ROLE_WORDS) -> str:
    if line.startswith("\\") and _escapable(line, speakers):
        return line[1:]
    return line


def split_lines(text: str) -> list[str]:
    """``text`` split at every line separator, the separators kept at the odd positions:
    ``[line, sep, line, sep, ..., line]``; ``"".join`` gives ``text`` back."""
    return LINE_SEPARATOR_RE.split(text)


def render_message(message: ChatMessage, speakers: frozenset[str] | None = None) -> str:
    """One message rendered; ``speakers`` (``speakers_of`` the conversation) decides which
    other label forms in its body are escaped. Alone, it is the role labels and the
    message's own label."""
    if speakers is None:
        speakers = ROLE_WORDS | {speaker_key(speaker_label(message))}
    parts = split_lines(message.content)
    out = [f"[{speaker_label(message)}]: {parts[0]}"]
    for i in range(1, len(parts), 2):
        out.append(parts[i])  # the separator, kept as written
        out.append(escape_body_line(parts[i + 1], speakers))
    return "".join(out)


def name_line(name: str, lang: Language) -> str:
    return NAME_LINE[lang].format(name=name)


def render_conversation(messages: Sequence[ChatMessage], *, lang: Language | None = None) -> str:
    """Render messages to the L1_RAW text form (D1-D6).

    The name line (D5) stands first and once when a ``role=user`` message has a name, in
    the language of the content (D6) unless ``lang`` forces one. See ``resolve_user_name``
    for users with several names.
    """
    speakers = speakers_of(messages)
    body = [render_message(m, speakers) for m in messages]
    user = resolve_user_name(messages)
    if user.name is not None:
        body.insert(0, name_line(user.name, lang or conversation_language(messages)))
    return "\n".join(body)

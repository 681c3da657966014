"""Reading L1_RAW text back into messages (H2-H4) and building history context (H5).

Parsing rule (H4): the text is split into lines at every line separator
``str.splitlines`` knows (``\\n``, ``\\r\\n``, ``\\r``, U+2028, ...; see
``hy_eval.conversation._render``), as a model reading the text would. A line starts a new
message exactly when it begins with a speaker label ``[X]:`` followed by a space or the
end of the line, where X is ``user``, ``assistant``, ``system``, ``tool`` or a speaker
name (any non-empty text of at most 64 characters without brackets and without
surrounding spaces; or, when ``names`` is given, one of those names). Every other line
continues the message before it. A line that is a name line (``The user's name is X`` or
``用户名叫X``) is taken out wherever it stands, and repeated name lines are merged (H2).

Rendering escapes body lines that would match either pattern with one leading backslash,
and parsing removes it, so text rendered by this package always reads back to the same
speakers. Which other label forms (``【user】：``, ``John: ``) rendering escaped depends on
the conversation's speakers; parsing finds them again in the text (``_speakers_in``).
Text written elsewhere without that escaping can still be misread where a body
line looks exactly like a label; see docs/conversation.md.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from hy_eval.conversation._lookalike import ROLE_WORDS, speaker_key
from hy_eval.conversation._messages import RESERVED_NAMES, ChatMessage
from hy_eval.conversation._render import (
    LABEL_LINE_RE,
    NAME_LINE_RE,
    split_lines,
    unescape_body_line,
)

MAX_NAME_LENGTH = 64


class HistoryError(ValueError):
    """L1_RAW text that cannot be read: text before the first speaker label."""

    def __init__(self, line: int, problem: str) -> None:
        self.line = line
        super().__init__(f"line {line}: {problem}")


@dataclass(frozen=True)
class ParsedHistory:
    """The messages of an L1_RAW text and the user's name from its name line(s)."""

    messages: list[ChatMessage]
    user_name: str | None
    #: Names from further name lines that disagree with the first one.
    name_conflicts: tuple[str, ...] = ()


def _is_name_label(label: str, names: Collection[str] | None) -> bool:
    if names is not None:
        return label in names
    return (
        len(label) <= MAX_NAME_LENGTH
        and label == label.strip()
        and label.lower() not in RESERVED_NAMES
    )


def _speakers_in(lines: list[str]) -> frozenset[str]:
    """The speakers rendering escaped body lines for (``_render.speakers_of``), found in
    the text: the role labels, the names of its name lines and every label. Body lines
    that imitate either were escaped, so they start with a backslash and match neither."""
    keys = set(ROLE_WORDS)
    for line in lines:
        found = NAME_LINE_RE.match(line) or LABEL_LINE_RE.match(line)
        if found:
            keys.add(speaker_key(found.group(1)))
    return frozenset(keys)


def read_l1_raw(text: str, *, names: Collection[str] | None = None) -> ParsedHistory:
    """Parse L1_RAW text; see the module docstring for the rule."""
    user_name: str | None = None
    conflicts: list[str] = []
    # Each entry: (role, name, body parts): text, then separator and line pairs, so that
    # a body joins back with the separators it was written with.
    current: tuple[str, str | None, list[str]] | None = None
    parsed: list[tuple[str, str | None, list[str]]] = []
    parts = split_lines(text)
    speakers = _speakers_in(parts[::2])
    for lineno, line in enumerate(parts[::2], start=1):
        separator = parts[2 * lineno - 3] if lineno > 1 else ""
        name_match = NAME_LINE_RE.match(line)
        if name_match:
            found = name_match.group(1)
            if user_name is None:
                user_name = found
            elif found != user_name and found not in conflicts:
                conflicts.append(found)
            current = None
            continue
        label_match = LABEL_LINE_RE.match(line)
        if label_match:
            label = label_match.group(1)
            body = line[label_match.end() :]
            role: str | None = None
            name: str | None = None
            if label in ("user", "assistant", "system", "tool"):
                role = label
            elif _is_name_label(label, names):
                role, name = "assistant", label
            if role is not None:
                if separator == "\r\n" and current is not None:
                    # A body ending in "\r" before the "\n" that joins messages: rendering
                    # escapes a label after a "\r\n" inside a body, so this one is a join.
                    current[2].append("\r")
                current = (role, name, [body])
                parsed.append(current)
                continue
        if current is None:
            if line.strip() == "":
                continue
            raise HistoryError(lineno, "text before the first speaker label")
        current[2].extend((separator, unescape_body_line(line, speakers)))
    messages = [
        ChatMessage(
            role=role,  # type: ignore[arg-type]
            content="".join(lines),
            name=user_name if role == "user" else name,
        )
        for role, name, lines in parsed
    ]
    return ParsedHistory(messages, user_name, tuple(conflicts))


def parse_l1_raw(text: str, *, names: Collection[str] | None = None) -> list[ChatMessage]:
    """Messages of an L1_RAW text (H2-H4).

    The leading name line is recognised and never returned as a message (H2); the user's
    name it gives is set on every ``role=user`` message. ``[John]:`` reads back as
    ``role=assistant, name="John"`` (H3); ``[assistant]:`` as the unnamed AI assistant.
    Tool names and tool call ids are not part of the rendered form and come back empty.
    """
    return read_l1_raw(text, names=names).messages


TRUNCATION_MARK = "…"


def history_context(messages: Sequence[ChatMessage], limit: int) -> list[ChatMessage]:
    """Messages for the model's history context (H5).

    User messages are kept whole. Every other message (the AI assistant, named humans,
    tools and system) longer than ``limit`` characters is cut to ``limit`` characters,
    the last of which is ``…``.
    """
    if limit < 1:
        raise ValueError("history limit must be at least 1 character")
    out = []
    for m in messages:
        if m.role != "user" and len(m.content) > limit:
            m = replace(m, content=m.content[: limit - 1] + TRUNCATION_MARK)
        out.append(m)
    return out

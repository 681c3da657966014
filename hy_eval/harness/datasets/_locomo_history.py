"""The earlier turns a LoCoMo case carries as ``history``: the latest session parts,
whole, whose rendered text (as L1_RAW stores it) fits in a number of characters.

The rendered length of a run of parts is a sum over the parts (each message renders on
its own, joined by newlines) plus the name line, whose length depends on the language
of the whole run; the language compares counts that add up over parts too. So each part
is rendered once, per speaker, when it is added, and the history of every later part is
found from prefix sums, never by rendering the earlier parts again (which made the
import quadratic in a session's parts).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from hy_eval.conversation import normalise_messages
from hy_eval.conversation._render import Language, language_counts, name_line, render_message
from hy_eval.harness.datasets._locomo import Turn
from hy_eval.harness.datasets._locomo_parts import Part


def turn_messages(turns: Sequence[Turn], me: str) -> list[dict[str, str]]:
    """The turns as messages from ``me``'s side: ``me`` the user, the other speaker a
    named human on the assistant role."""
    return [
        {
            "role": "user" if t.speaker == me else "assistant",
            "name": t.speaker,
            "content": t.content,
        }
        for t in turns
    ]


@dataclass
class History:
    """The parts seen so far, from ``me``'s side. The lists after ``messages`` are prefix
    sums over the parts (index i: the parts before part i)."""

    me: str
    messages: list[list[dict[str, str]]] = field(default_factory=list)
    #: Rendered characters of each part plus one for the newline that joins it to the next.
    chars: list[int] = field(default_factory=lambda: [0])
    han: list[int] = field(default_factory=lambda: [0])
    words: list[int] = field(default_factory=lambda: [0])
    #: Parts with a message of ``me``: when any is in the history, the name line is too.
    mine: list[int] = field(default_factory=lambda: [0])

    def add(self, part: Part) -> None:
        """Add the next part (a part always has a turn: ``split_session`` makes none empty)."""
        msgs = turn_messages(part.turns, self.me)
        chat = normalise_messages(msgs)
        rendered = sum(len(render_message(m)) for m in chat) + len(chat)
        han, words = language_counts([m.content for m in chat])
        self.messages.append(msgs)
        self.chars.append(self.chars[-1] + rendered)
        self.han.append(self.han[-1] + han)
        self.words.append(self.words[-1] + words)
        self.mine.append(self.mine[-1] + any(t.speaker == self.me for t in part.turns))

    def _length(self, k: int) -> int:
        """The rendered length of the latest ``k`` parts, as ``render_conversation``."""
        p, j = len(self.messages), len(self.messages) - k
        body = self.chars[p] - self.chars[j] - 1
        if self.mine[p] == self.mine[j]:
            return body
        lang: Language = "zh" if self.han[p] - self.han[j] > self.words[p] - self.words[j] else "en"
        return body + len(name_line(self.me, lang)) + 1

    def latest(self, limit: int) -> tuple[list[dict[str, str]], int]:
        """The messages of the latest parts, whole and in order, that render within
        ``limit`` characters (more parts are added while they fit; the first that does
        not ends the search), and how many parts that is."""
        p = len(self.messages)
        # The name line is at most this long: while the body and it fit, any run fits,
        # so the run is found by bisection up to there and by trial only beyond.
        most = max(len(name_line(self.me, "en")), len(name_line(self.me, "zh"))) + 1
        first_fit = bisect.bisect_left(self.chars, self.chars[p] - 1 + most - limit, 0, p)
        taken = p - first_fit
        while taken < p and self._length(taken + 1) <= limit:
            taken += 1
        return [m for msgs in self.messages[p - taken :] for m in msgs], taken

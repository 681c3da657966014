"""Whether a predicted fact paired with a gold fact gives it to the right person: the
subject the gold names, or one of the two other readings the spec allows (A3, A6).

- A6, circle facts: a fact about someone of a speaker's circle who does not speak has the
  speaker as its subject ("The user's wife Thandi is a paramedic."). Written with that
  person as the subject ("Thandi is a paramedic."), it gives the fact to the person it
  describes, who is a subject of their own (A8): also right. Wrong is giving it to the
  speaker ("The user is a paramedic."). So a prediction whose subject is a person who
  does not speak is right when the gold fact names that person in a relation of its
  subject ("the user's wife Thandi", "his wife Thandi", "用户的妻子Thandi").
- A3, actions done for the user: what the assistant did at the user's request (put an
  appointment in the user's calendar, booked, ordered, set a reminder) records a fact of
  the user's life, whose subject is the user. Written as the assistant's action ("The
  assistant added Mochi's Thursday 10:30 appointment to the user's calendar."), the
  prediction states the user's fact: right for a gold fact about the user, when its text
  names such an action and the user as the one it was done for. A suggestion stays the
  assistant's (A3): "suggested", "recommended", 建议 and 推荐 are not actions here.
"""

from __future__ import annotations

import re

from hy_eval.harness.datasets import GoldFact, subject_right
from hy_eval.memory import Subject

# "the user's wife Thandi", "Farid's younger sister Noor", "his wife Thandi": a possessive,
# one to three relation words, then the name.
_EN_RELATION = r"(?:'s|s'|\b(?:his|her|their|my))\s+(?:[a-z][a-z-]*\s+){1,3}"
# "用户的妻子朵朵", "王伟的妹妹小丽": 的, a relation of one to four characters, the name.
_ZH_RELATION = r"的[^\s，。,.、]{1,4}?\s*"

_EN_ACTION = re.compile(
    r"(?i)\b(?:added|adds|booked|books|scheduled|schedules|set up|sets up|set|created|"
    r"creates|put|puts|ordered|orders|reserved|reserves|saved|saves|registered|"
    r"registers|entered|enters|logged|logs)\b"
)
_EN_FOR_USER = re.compile(r"(?i)\b(?:the user's|for the user|the user)\b")
_ZH_ACTION = re.compile(
    r"添加|加入|加到|加进|预约|预订|订了|订好|安排|设置|设了|设好|创建|记下|登记|录入"
)
_ZH_FOR_USER = re.compile(r"(?:为|给|帮|替)用户|用户的")
_SUGGESTION = re.compile(r"(?i)\b(?:suggest\w*|recommend\w*|advis\w*|propos\w*)\b|建议|推荐|提议")


def _named_in_relation(gold_text: str, name: str) -> bool:
    """``name`` follows a possessive relation phrase in ``gold_text``."""
    pattern = rf"(?:{_EN_RELATION}|{_ZH_RELATION}){re.escape(name)}"
    return re.search(pattern, gold_text, flags=re.IGNORECASE) is not None


def _done_for_user(text: str) -> bool:
    """The text is the assistant's action carried out for the user (A3)."""
    if _SUGGESTION.search(text):
        return False
    en = _EN_ACTION.search(text) is not None and _EN_FOR_USER.search(text) is not None
    zh = _ZH_ACTION.search(text) is not None and _ZH_FOR_USER.search(text) is not None
    return en or zh


def pair_subject_right(gold: GoldFact, predicted: Subject, predicted_text: str) -> bool:
    """The prediction's subject is right for this gold fact: the gold's subject, or a
    reading A6 or A3 allows (module docstring)."""
    if subject_right(gold.subject, predicted):
        return True
    if predicted.kind == "other" and predicted.name and gold.text:
        return _named_in_relation(gold.text, predicted.name)
    if predicted.kind == "unknown" and gold.text:
        # A Chinese name of someone who does not speak is not read back (A8 reads the
        # speakers' names): the prediction's first two to four characters are taken as
        # the name when the gold fact names them in a relation ("用户的女儿朵朵").
        head = predicted_text.strip()
        return any(
            re.search(_ZH_RELATION + re.escape(head[:n]), gold.text) is not None
            for n in (4, 3, 2)
            if len(head) >= n and all("\u4e00" <= ch <= "\u9fff" for ch in head[:n])
        )
    if predicted.kind == "assistant" and gold.subject == "user":
        return _done_for_user(predicted_text)
    return False

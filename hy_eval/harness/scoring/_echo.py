"""Predicted facts about the people of the prompt's worked examples (``echoed_subject_rate``,
docs/metrics.md).

A model that copies the extraction prompt's examples into its answer writes facts about
people the conversation never names: "王伟在学校教钢琴。" in a conversation between two
others. Such a fact has a subject of its own (A8), so no other metric sees it unless a
gold fact happens to be about the same words. This module finds them.

A predicted fact is echoed when its subject is a person of the examples who is named
nowhere in the case's conversation or history (a person of the examples who also speaks
or is mentioned there is that person, not an echo). The subject is the scorer's:
``subject_of`` with the case's speakers (A5, A8). That reading gives a person who is not
a speaker as ``other`` with their name, or as ``unknown`` where it cannot read the name
(a Chinese name followed by neither a verb nor a particle it knows: "张敏对猫过敏。").
So the fact is read a second time with the example people added to the speakers, which
makes their names readable as ``subject_of`` reads any speaker's; the fact is echoed when
that second reading gives an example person and the first gave nobody else: ``unknown``,
or ``other`` naming the same person. A fact the scorer gives to the user, the assistant
or a speaker of the case is never echoed, whatever names it mentions later ("The user
shares a flat with Mary and Bill.").
"""

from __future__ import annotations

from collections.abc import Sequence

from hy_eval.conversation import normalise_messages, render_conversation
from hy_eval.harness.datasets import Case
from hy_eval.memory import Speakers, Subject, mentions, subject_of

METRIC = "echoed_subject_rate"


def case_text(case: Case) -> str:
    """The case's conversation and history as the pipeline renders them (labels and the
    name line included): where a person of the examples may be named."""
    parts = [render_conversation(case.normalised)]
    if case.history:
        parts.append(render_conversation(normalise_messages(case.history)))
    return "\n".join(parts)


def echoed_people(
    case: Case, texts: Sequence[str], subjects: Sequence[Subject], people: Sequence[str]
) -> list[str | None]:
    """Per predicted fact (``texts`` with the scorer's ``subjects``), the person of the
    examples (``people``, ``example_people`` of the run's prompt) it is about, or None
    when it is not echoed (module docstring)."""
    if not texts or not people:
        return [None] * len(texts)
    context = case_text(case)
    absent = [p for p in people if not mentions(context, p)]
    if not absent:
        return [None] * len(texts)
    speakers = case.speakers
    wider = Speakers.of(
        speakers.user_name,
        [*speakers.named, *absent],
        {who: list(forms) for who, forms in speakers.aliases},
    )
    out: list[str | None] = []
    for text, subject in zip(texts, subjects, strict=True):
        out.append(_echoed(text, subject, wider, absent))
    return out


def _echoed(text: str, subject: Subject, wider: Speakers, absent: list[str]) -> str | None:
    if subject.kind not in ("other", "unknown"):
        return None  # the user, the assistant or a speaker of the case
    again = subject_of(text, wider)
    if again.kind != "named" or again.name not in absent:
        return None
    if subject.kind == "other" and subject.identity != again.identity:
        return None  # the scorer read another person first ("Dr. Patel met Mary.")
    return again.name

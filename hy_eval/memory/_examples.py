"""The people of an extraction prompt's worked examples: the names a model may copy into
its answer when the conversation gives it little to say (``echoed_subject_rate``,
docs/metrics.md).

They are read from the prompt as a run renders it, not from a list kept here, so a
variant that changes or drops its examples changes them too: the ``examples`` block of
the variant's extraction template for the language, counted only when the rendered
system prompt shows it (``short`` inherits the default's block but never calls it). Each
example is a conversation in the L1_RAW form (D2-D5), read back with the parser of
``hy_eval.conversation`` (H2-H4): the name lines give the example's user, the bracketed
labels its other speakers (``[John]``, ``[王伟]``; the role labels ``[user]``,
``[assistant]``, ``[tool]`` and ``[system]`` are nobody), and the ``name`` of an example
answer's ``basic_info`` its user again where no name line says it ("Hi, I'm Ana").
"""

from __future__ import annotations

import json

from hy_eval.conversation import HistoryError, read_l1_raw
from hy_eval.memory._prompts import LANGUAGES, PromptError, PromptLibrary

#: The block of ``extract.<lang>.j2`` that holds the worked examples.
EXAMPLES_BLOCK = "examples"


def example_people(prompts: PromptLibrary, lang: str) -> tuple[str, ...]:
    """The names of the people in ``prompts``' extraction examples for ``lang``, in the
    order they first appear; empty for a variant without examples (``no_examples``) or
    whose prompt does not show them. Raises ``PromptError`` for an unknown language."""
    if lang not in LANGUAGES:
        raise PromptError(f"unknown prompt language {lang!r}")
    block = (prompts.block_text("extract", lang, EXAMPLES_BLOCK) or "").strip()
    if not block:
        return ()
    system = prompts.render(
        "extract",
        lang,
        {"conversation": "", "history": "", "user_name": None, "named_speakers": [], "lang": lang},
    ).system
    if block not in system:
        return ()
    return people_in_examples(block)


def people_in_examples(text: str) -> tuple[str, ...]:
    """The people of worked examples written as L1_RAW conversations, each followed by
    its JSON answer (see the module docstring); ``text`` may start with a heading."""
    names: list[str] = []
    lines = text.splitlines()
    # The examples start at the first line the parser accepts as a label or name line;
    # a heading ("# Examples") before it is not part of any conversation.
    for start in range(len(lines)):
        try:
            parsed = read_l1_raw("\n".join(lines[start:]))
        except HistoryError:
            continue
        found = [parsed.user_name, *parsed.name_conflicts]
        found += [m.name for m in parsed.messages if m.is_named_human]
        found += [_answer_name(line) for line in lines[start:]]
        names = [n for n in found if n]
        break
    return tuple(dict.fromkeys(n.strip() for n in names if n.strip()))


def _answer_name(line: str) -> str | None:
    """``basic_info.name`` of an example answer written on one line, else None."""
    if not line.lstrip().startswith("{"):
        return None
    try:
        answer = json.loads(line)
    except ValueError:
        return None
    info = answer.get("basic_info") if isinstance(answer, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None

"""LoCoMo sessions as cases: keywords, perspectives, history, and the suite folder
(issue 19; docs/datasets.md, "LoCoMo import"). ``_locomo`` reads the data."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hy_eval.conversation import conversation_language, normalise_messages, render_conversation
from hy_eval.harness._dataset import MAX_LINE_BYTES, Case, DatasetError, load_suite
from hy_eval.harness._locomo import (
    GENERIC_WORDS,
    HISTORY_CHARS,
    NARRATION_WORDS,
    SUITE_FILE,
    TAGS,
    Conversation,
    ImportStats,
    KeywordChoice,
    LocomoError,
    Turn,
    read_conversations,
)
from hy_eval.harness._locomo_parts import Part, split_session
from hy_eval.harness._words import NEGATIONS, STOP_WORDS, fold, latin_words
from hy_eval.memory._extract import MAX_FACTS

_POSSESSIVE_RE = re.compile(r"['’]s$")


def _base(word: str) -> str:
    return _POSSESSIVE_RE.sub("", word)


def content_words(text: str, names: Iterable[str]) -> list[str]:
    """The keyword candidates of a fact, in order, once each: folded Latin words without
    a possessive ``'s``, not a stop word, narration word or speaker's name, no
    contraction, at least three letters (numbers of any length count)."""
    skip = STOP_WORDS | NEGATIONS | NARRATION_WORDS | {fold(n) for n in names}
    out: list[str] = []
    for word in latin_words(text):
        base = _base(word)
        if word in skip or base in skip or "'" in base or "’" in base:
            continue
        if (len(base) >= 3 or base.isdigit()) and base not in out:
            out.append(base)
    return out


def keyword_form(word: str) -> str:
    """A plural's ending is dropped (``studios`` -> ``studio``, ``sandwiches`` ->
    ``sandwich``): still part of the observation's text, and now also found in a fact that
    says ``studio``. A plural in ``-ies`` stays whole (``story`` is not in ``stories``)."""
    if len(word) <= 4 or not word.endswith("s") or word.endswith(("ss", "us", "is", "ies")):
        return word
    if word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    return word[:-1]


def _holds_all(text: str, keywords: Sequence[str]) -> bool:
    folded = " ".join(fold(text).split())
    return all(k in folded for k in keywords)


def choose_keywords(
    facts: Sequence[str], names: Iterable[str], conversation_df: Counter[str] | None = None
) -> list[KeywordChoice | None]:
    """Keywords for each fact of a case (``None``: no word to use, the fact is dropped).

    The rule: a fact's candidates (:func:`content_words`) are ranked by how many facts of
    the case hold them (rarest first), then common words (``GENERIC_WORDS``) last, then
    by how many observations of the whole conversation hold them (``conversation_df``),
    then longer first, then earlier first. The
    first is taken; when another fact of the case still holds it (as a substring, as the
    keyword matcher reads it), the second is added too. At most two: each keyword must be
    in a matching predicted fact, and a third would reject fair paraphrases.
    A fact with no candidate uses its longest word of three letters or more that is not a
    name (``fallback``); with none, it is dropped.
    """
    names = list(names)
    folded_names = {fold(n) for n in names}
    cands = [content_words(f, names) for f in facts]
    case_df = Counter(w for c in cands for w in set(c))
    global_df = conversation_df or Counter()
    out: list[KeywordChoice | None] = []
    for i, fact in enumerate(facts):
        others = [f for j, f in enumerate(facts) if j != i]
        ranked = sorted(
            cands[i],
            key=lambda w: (
                case_df[w],
                w in GENERIC_WORDS,
                global_df[w],
                -len(w),
                cands[i].index(w),
            ),
        )
        if not ranked:
            rest = [
                _base(w)
                for w in latin_words(fact)
                if _base(w) not in folded_names and len(_base(w)) >= 3 and "'" not in _base(w)
            ]
            if not rest:
                out.append(None)
                continue
            out.append(KeywordChoice((max(rest, key=len),), "fallback"))
            continue
        chosen = [keyword_form(ranked[0])]
        if len(ranked) > 1 and any(_holds_all(o, chosen) for o in others):
            chosen.append(keyword_form(ranked[1]))
        shared = any(_holds_all(o, chosen) for o in others)
        out.append(KeywordChoice(tuple(chosen), "shared" if shared else "distinctive"))
    return out


def _speaker_slugs(speakers: tuple[str, str]) -> tuple[str, str]:
    """Case id parts for the two speakers: their names in ASCII letters and digits, or
    ``a`` and ``b`` when that leaves nothing or the same for both."""
    slugs = []
    for name in speakers:
        ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
        slugs.append(re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:20])
    if not all(slugs) or slugs[0] == slugs[1]:
        return ("a", "b")
    return (slugs[0], slugs[1])


def _messages(turns: Sequence[Turn], me: str) -> list[dict[str, str]]:
    return [
        {
            "role": "user" if t.speaker == me else "assistant",
            "name": t.speaker,
            "content": t.content,
        }
        for t in turns
    ]


def _history(earlier: Sequence[Part], me: str, limit: int) -> tuple[list[dict[str, str]], int]:
    """The latest earlier parts (of this session, then of earlier ones), whole, whose
    rendered text (as L1_RAW stores it) fits in ``limit`` characters, in order; and how
    many parts that is."""
    best: list[dict[str, str]] = []
    taken = 0
    for k in range(1, len(earlier) + 1):
        msgs = [m for part in earlier[-k:] for m in _messages(part.turns, me)]
        if not msgs:
            continue
        if len(render_conversation(normalise_messages(msgs))) > limit:
            break
        best, taken = msgs, k
    return best, taken


def conversation_cases(
    conv: Conversation, history_chars: int, stats: ImportStats, max_facts: int = MAX_FACTS
) -> list[dict[str, Any]]:
    """Two cases for each part of a session of ``conv`` with observations (fields as in
    docs/datasets.md), updating ``stats``."""
    stats.conversations += 1
    stats.sessions += len(conv.sessions)
    conv_df = Counter(
        w
        for s in conv.sessions
        for found in s.observations.values()
        for ob in found
        for w in set(content_words(ob.text, conv.speakers))
    )
    slugs = dict(zip(conv.speakers, _speaker_slugs(conv.speakers), strict=True))
    cases: list[dict[str, Any]] = []
    earlier: list[Part] = []
    for session in conv.sessions:
        split = split_session(session, conv.speakers, max_facts)
        if any(ob for obs in session.observations.values() for ob in obs):
            if not session.turns:
                raise LocomoError(
                    f"conversation {conv.key}: session_{session.number} has observations "
                    "but no turns"
                )
            stats.sessions_with_observations += 1
            stats.split_sessions += len(split.parts) > 1
        stats.duplicates += split.repeats
        stats.unplaced += split.unplaced
        stats.over_limit += split.over
        for part in split.parts:
            if part.facts:
                cases.extend(_part_cases(conv, part, earlier, history_chars, slugs, conv_df, stats))
            earlier.append(part)
    return cases


def _part_cases(
    conv: Conversation,
    part: Part,
    earlier: Sequence[Part],
    history_chars: int,
    slugs: dict[str, str],
    conv_df: Counter[str],
    stats: ImportStats,
) -> list[dict[str, Any]]:
    stats.observations += len(part.facts)
    choices = choose_keywords([t for _, t in part.facts], conv.speakers, conv_df)
    for choice in choices:
        if choice is None:
            stats.dropped += 1
        else:
            stats.keyword_kinds[choice.kind] += 1
            stats.two_keywords += len(choice.keywords) == 2
    out = []
    for me in conv.speakers:
        gold = [
            {
                "subject": "user" if who == me else who,
                "owner": "user",
                "text": text,
                "keywords": list(c.keywords),
            }
            for (who, text), c in zip(part.facts, choices, strict=True)
            if c is not None
        ]
        if not gold:
            continue
        history, taken = _history(earlier, me, history_chars) if history_chars > 0 else ([], 0)
        case_id = f"locomo-{conv.key[:40]}-{part.label}-{slugs[me]}"
        out.append(_case(case_id, part, me, gold, history))
        stats.cases += 1
        stats.gold_facts += len(gold)
        stats.cases_with_history += bool(history)
        stats.history_parts += taken
    return out


def _case(
    case_id: str,
    part: Part,
    me: str,
    gold: list[dict[str, Any]],
    history: list[dict[str, str]],
) -> dict[str, Any]:
    messages = _messages(part.turns, me)
    subjects = {g["subject"] for g in gold}
    rules = (
        ["M2"]
        + (["A1"] if "user" in subjects else [])
        + (["A2"] if subjects - {"user"} else [])
        + ["A4"]
    )
    tags = list(TAGS) + (["with_history"] if history else [])
    if any(t.caption for t in part.turns):
        tags.append("image_caption")
    if part.count > 1:
        tags.append("session_part")
    case: dict[str, Any] = {
        "id": case_id,
        "lang": conversation_language(normalise_messages(messages)),
        "rules": rules,
        "tags": tags,
        "history": history,
        "messages": messages,
        "expect": {"facts": gold},
    }
    if not history:
        del case["history"]
    try:
        Case.model_validate(case)
    except ValidationError as exc:
        raise LocomoError(f"{case_id}: {exc.errors()[0]['msg']}") from None
    return case


def import_locomo(
    path: Path, out: Path, *, history_chars: int = HISTORY_CHARS, max_facts: int = MAX_FACTS
) -> ImportStats:
    """Write the suite ``out/locomo.jsonl`` from the LoCoMo data at ``path`` and check it
    loads as a suite. Raises :class:`LocomoError` for input that cannot be imported."""
    if history_chars < 0:
        raise LocomoError("--history-chars: must be 0 or more")
    if out.exists() and not out.is_dir():
        raise LocomoError(f"{out}: exists and is not a folder")
    others = (
        sorted(
            p.name
            for p in out.glob("*.jsonl")
            if not p.name.startswith("_") and p.name != SUITE_FILE
        )
        if out.is_dir()
        else []
    )
    if others:
        raise LocomoError(
            f"{out}: holds other suite files ({', '.join(others)}); choose another folder"
        )
    convs = read_conversations(path)
    stats = ImportStats(history_chars=history_chars, max_facts=max_facts)
    lines = [
        json.dumps(case, ensure_ascii=False)
        for conv in convs
        for case in conversation_cases(conv, history_chars, stats, max_facts)
    ]
    if not lines:
        raise LocomoError(f"{path}: no session has observations; nothing to import")
    for line in lines:
        size = len(line.encode("utf-8")) + 1
        if size > MAX_LINE_BYTES:
            case_id = json.loads(line)["id"]
            raise LocomoError(
                f"{case_id}: {size} bytes, over the {MAX_LINE_BYTES}-byte line limit of a "
                "suite; lower --history-chars"
            )
    out.mkdir(parents=True, exist_ok=True)
    target = out / SUITE_FILE
    tmp = out / f".{SUITE_FILE}.{os.getpid()}.tmp"
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    try:
        load_suite(str(out))
    except DatasetError as exc:
        raise LocomoError(f"{target}: the imported suite does not validate: {exc}") from None
    stats.out = target
    return stats

"""LoCoMo sessions as cases: keywords, perspectives, history, and the suite folder
(docs/datasets.md, "LoCoMo import"). ``_locomo`` reads the data."""

from __future__ import annotations

import functools
import json
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from hy_eval.conversation import MessageError, conversation_language, normalise_messages
from hy_eval.harness.datasets._expect import subject_right
from hy_eval.harness.datasets._keywords import contains_all
from hy_eval.harness.datasets._locomo import (
    GENERIC_WORDS,
    HISTORY_CHARS,
    NARRATION_WORDS,
    SUITE_FILE,
    TAGS,
    Conversation,
    ImportStats,
    KeywordChoice,
    read_conversations,
)
from hy_eval.harness.datasets._locomo_history import History, turn_messages
from hy_eval.harness.datasets._locomo_limits import MAX_CASE_OBSERVATIONS, Limits, LocomoError
from hy_eval.harness.datasets._locomo_parts import Part, split_session
from hy_eval.harness.datasets._schema import MAX_LINE_BYTES, Case, DatasetError, load_suite
from hy_eval.harness.text import NEGATIONS, STOP_WORDS, fold, latin_words
from hy_eval.memory import Speakers, subject_of
from hy_eval.memory._extract import MAX_FACT_CHARS, MAX_FACTS

_POSSESSIVE_RE = re.compile(r"['’]s$")
#: Where a clause ends, in English or Chinese punctuation: a long fact is cut there. A
#: Latin mark counts only before a space or the text's end (not in ``3.5`` or ``1,000``);
#: a full-width mark counts anywhere. The enumeration comma ``、`` separates list items,
#: not clauses.
_CLAUSE_END_RE = re.compile(r"[,;:.!?—](?=\s|$)|[，；：。！？]")
#: The full stop that ends a text cut at a mark: a sentence's own end stays, a comma,
#: semicolon, colon or dash becomes the full stop of its script.
_FULL_STOP = {",": ".", ";": ".", ":": ".", "—": ".", "，": "。", "；": "。", "：": "。"}


def _base(word: str) -> str:
    return _POSSESSIVE_RE.sub("", word)


def content_words(text: str, names: Iterable[str]) -> list[str]:
    """The keyword candidates of a fact, in order, once each: folded Latin words without
    a possessive ``'s``, not a stop word, narration word or speaker's name, no
    contraction, at least three letters (numbers of any length count)."""
    skip = STOP_WORDS | NEGATIONS | NARRATION_WORDS | {fold(n) for n in names}
    out: list[str] = []
    seen: set[str] = set()
    for word in latin_words(text):
        base = _base(word)
        if word in skip or base in skip or "'" in base or "’" in base:
            continue
        if (len(base) >= 3 or base.isdigit()) and base not in seen:
            seen.add(base)
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


def _holds_all(folded: str, keywords: Sequence[str]) -> bool:
    """Whether ``folded`` (a text folded, its spaces made single) holds every keyword."""
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
    choose = keyword_chooser(facts, names, conversation_df)
    return [choose(i, fact) for i, fact in enumerate(facts)]


def keyword_chooser(
    facts: Sequence[str], names: Iterable[str], conversation_df: Counter[str] | None = None
) -> Callable[[int, str], KeywordChoice | None]:
    """The rule of :func:`choose_keywords` for one fact at a time: ``choose(i, text)``
    gives the keywords of fact ``i`` of ``facts`` written as ``text`` (its own text, or a
    shortened start of it, :func:`fit_fact_text`). The candidates are ``text``'s words;
    they are ranked against, and kept apart from, the case's other facts as written in
    ``facts``, whatever ``text`` is. A fact that is shortened holds a start of its text, so
    a keyword no other fact's whole text holds is held by no other gold text either."""
    names = list(names)
    folded_names = {fold(n) for n in names}
    cands = [content_words(f, names) for f in facts]
    own = [set(c) for c in cands]
    folded = [" ".join(fold(f).split()) for f in facts]
    case_df = Counter(w for c in own for w in c)
    global_df = conversation_df or Counter()

    def choose(i: int, text: str) -> KeywordChoice | None:
        # Each fact against every other: a case holds at most MAX_CASE_OBSERVATIONS.
        others = folded[:i] + folded[i + 1 :]
        words = content_words(text, names)
        order = {w: k for k, w in enumerate(words)}
        # The facts of the case holding each word, fact i counted as ``text``.
        df = {w: case_df[w] - (w in own[i]) + 1 for w in words}
        ranked = sorted(
            words,
            key=lambda w: (
                df[w],
                w in GENERIC_WORDS,
                global_df[w],
                -len(w),
                order[w],
            ),
        )
        if not ranked:
            rest = [
                _base(w)
                for w in latin_words(text)
                if _base(w) not in folded_names and len(_base(w)) >= 3 and "'" not in _base(w)
            ]
            if not rest:
                return None
            return KeywordChoice((max(rest, key=len),), "fallback")
        chosen = [keyword_form(ranked[0])]
        if len(ranked) > 1 and any(_holds_all(o, chosen) for o in others):
            chosen.append(keyword_form(ranked[1]))
        shared = any(_holds_all(o, chosen) for o in others)
        return KeywordChoice(tuple(chosen), "shared" if shared else "distinctive")

    return choose


def clause_cuts(text: str, limit: int = MAX_FACT_CHARS) -> list[str]:
    """The starts of ``text`` that end where a clause ends (``_CLAUSE_END_RE``), each
    ended with a full stop, that fit in ``limit`` characters: the longest first."""
    cuts = []
    for m in _CLAUSE_END_RE.finditer(text):
        head = text[: m.start()].rstrip()
        short = head + _FULL_STOP.get(m.group(), m.group())
        if len(short) > limit:
            break
        if head:
            cuts.append(short)
    return cuts[::-1]


def fit_fact_text(
    text: str,
    choose: Callable[[str], KeywordChoice | None],
    limit: int = MAX_FACT_CHARS,
) -> tuple[str, KeywordChoice] | None:
    """The text a gold fact holds and its keywords (``choose(text)``, the case's keyword
    rule, :func:`keyword_chooser`). ``text`` itself when it fits in ``limit`` characters
    (an extraction answer's fact holds at most ``MAX_FACT_CHARS``, and a longer one is cut
    with ``…``, so a perfect answer could lose a keyword). A longer text is shortened at a
    clause boundary: the clause cuts (:func:`clause_cuts`) are tried from the longest
    down, keywords are chosen for each cut's own text, and the first cut that gets
    keywords and holds every item of them (as the keyword matcher reads them) is kept.
    So a keyword of the whole text found only past the last cut that fits does not lose
    the fact. ``None`` when no cut gets keywords (or ``text`` fits and gets none): the
    fact is dropped. The start keeps the subject, which attribution reads from the
    text."""
    if len(text) <= limit:
        choice = choose(text)
        return None if choice is None else (text, choice)
    for short in clause_cuts(text, limit):
        choice = choose(short)
        if choice is not None and contains_all(short, list(choice.keywords)):
            return short, choice
    return None


def reads_as_its_subject(text: str, who: str, speakers: tuple[str, str]) -> bool:
    """Whether ``text``, an observation LoCoMo lists under speaker ``who``, is about
    ``who`` as scoring reads a fact's subject (``subject_of``, A5), from both speakers'
    sides. Not when it names first someone who does not speak ("Luna, the shelter cat,
    is 5 years old."; a pet, a full name the conversation never uses) or the other
    speaker (LoCoMo lists a few under the wrong speaker): a perfect answer repeating the
    text would be scored as misattributed."""
    for me in speakers:
        other = [s for s in speakers if s != me]
        gold = "user" if who == me else who
        if not subject_right(gold, subject_of(text, Speakers.of(me, other))):
            return False
    return True


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


def _conversation_cases(
    conv: Conversation, history_chars: int, stats: ImportStats, max_facts: int, limits: Limits
) -> Iterator[dict[str, Any]]:
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
    histories = {me: History(me) for me in conv.speakers}
    for session in conv.sessions:
        where = f"{conv.where or 'conversation ' + conv.key}: session_{session.number}"
        split = split_session(session, conv.speakers, max_facts)
        if any(ob for obs in session.observations.values() for ob in obs):
            if not session.turns:
                raise LocomoError(f"{where} has observations but no turns")
            stats.sessions_with_observations += 1
            stats.split_sessions += len(split.parts) > 1
        stats.duplicates += split.repeats
        stats.unplaced += split.unplaced
        stats.over_limit += split.over
        for part in split.parts:
            if len(part.facts) > MAX_CASE_OBSERVATIONS:
                raise LocomoError(
                    f"{where}_observation: {len(part.facts):,} observations cite turns that "
                    f"cannot be cut apart, over the limit of {MAX_CASE_OBSERVATIONS} in one case"
                )
            if part.facts:
                yield from _part_cases(conv, part, histories, history_chars, slugs, conv_df, stats)
            for history in histories.values():
                history.add(part)
            limits.check_time(where)


def _part_cases(
    conv: Conversation,
    part: Part,
    histories: dict[str, History],
    history_chars: int,
    slugs: dict[str, str],
    conv_df: Counter[str],
    stats: ImportStats,
) -> list[dict[str, Any]]:
    stats.observations += len(part.facts)
    choose = keyword_chooser([t for _, t in part.facts], conv.speakers, conv_df)
    # (speaker, text as the gold fact holds it, keywords) of each fact kept.
    kept: list[tuple[str, str, KeywordChoice]] = []
    for i, (who, text) in enumerate(part.facts):
        choice = choose(i, text)
        if choice is None:
            stats.dropped += 1
            continue
        if len(text) > MAX_FACT_CHARS:
            # Shortened at a clause, with keywords chosen on the shortened text.
            fitted = fit_fact_text(text, functools.partial(choose, i))
            if fitted is None:
                stats.too_long += 1
                continue
            text, choice = fitted
            stats.shortened += 1
        if not reads_as_its_subject(text, who, conv.speakers):
            stats.other_subject += 1
            continue
        stats.keyword_kinds[choice.kind] += 1
        stats.two_keywords += len(choice.keywords) == 2
        kept.append((who, text, choice))
    out = []
    for me in conv.speakers:
        gold = [
            {
                "subject": "user" if who == me else who,
                "owner": "user",
                "text": text,
                "keywords": list(c.keywords),
            }
            for who, text, c in kept
        ]
        if not gold:
            continue
        history, taken = histories[me].latest(history_chars) if history_chars > 0 else ([], 0)
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
    messages = turn_messages(part.turns, me)
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
    try:
        lang = conversation_language(normalise_messages(messages))
    except MessageError as exc:  # the speakers' names are checked on reading already
        raise LocomoError(f"{case_id}: {exc}") from None
    case: dict[str, Any] = {
        "id": case_id,
        "lang": lang,
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
    path: Path,
    out: Path,
    *,
    history_chars: int = HISTORY_CHARS,
    max_facts: int = MAX_FACTS,
    limits: Limits | None = None,
) -> ImportStats:
    """Write the suite ``out/locomo.jsonl`` from the LoCoMo data at ``path`` and check it
    loads as a suite, reading and writing within ``limits`` (the defaults of
    ``_locomo_limits`` when not given). Raises :class:`LocomoError` for input that cannot
    be imported; then nothing is left in ``out`` (a suite file there before stays)."""
    limits = (limits or Limits()).start()
    if history_chars < 0:
        raise LocomoError("--history-chars: must be 0 or more")
    _check_out(out)
    convs = read_conversations(path, limits)
    stats = ImportStats(history_chars=history_chars, max_facts=max_facts)
    created = not out.exists()
    target = out / SUITE_FILE
    tmp = out / f".{SUITE_FILE}.{os.getpid()}.tmp"
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8", newline="\n") as f:
            written = _write_cases(convs, f, history_chars, max_facts, stats, limits)
        if not written:
            raise LocomoError(f"{path}: no session has observations; nothing to import")
        _validate(tmp, target)
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp, out if created else None)
        raise LocomoError(f"{out}: cannot write the suite ({exc.strerror or exc})") from None
    except BaseException:
        _remove(tmp, out if created else None)
        raise
    stats.out = target
    return stats


def _check_out(out: Path) -> None:
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


def _write_cases(
    convs: Sequence[Conversation],
    f: TextIO,
    history_chars: int,
    max_facts: int,
    stats: ImportStats,
    limits: Limits,
) -> int:
    """Write each case as a line of ``f`` as it is made; the number of lines."""
    written = 0
    for conv in convs:
        for case in _conversation_cases(conv, history_chars, stats, max_facts, limits):
            line = json.dumps(case, ensure_ascii=False)
            size = len(line.encode("utf-8")) + 1
            if size > MAX_LINE_BYTES:
                raise LocomoError(
                    f"{case['id']}: {size} bytes, over the {MAX_LINE_BYTES}-byte line limit "
                    "of a suite; lower --history-chars"
                )
            limits.count_written(size, case["id"])
            f.write(line + "\n")
            written += 1
    return written


def _validate(tmp: Path, target: Path) -> None:
    """Load the written file as a suite before it takes the suite file's place."""
    try:
        load_suite(str(tmp))
    except DatasetError as exc:
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        first = exc.problems[0].replace(str(tmp), str(target)) if exc.problems else str(exc)
        raise LocomoError(
            f"{target}: the imported suite does not validate: {first}{more}"
        ) from None


def _remove(tmp: Path, folder: Path | None) -> None:
    """Remove a partly written file, and the folder when this import made it."""
    try:
        tmp.unlink(missing_ok=True)
        if folder is not None:
            folder.rmdir()
    except OSError:
        pass

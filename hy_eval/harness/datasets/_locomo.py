"""LoCoMo conversations as a suite of attribution cases (docs/datasets.md,
"LoCoMo import").

LoCoMo (github.com/snap-research/locomo) holds long two-person conversations. Each
conversation has ``speaker_a``, ``speaker_b``, sessions ``session_N`` (turns with
``speaker``, ``dia_id``, ``text`` and sometimes an image's ``blip_caption``) and per
session ``session_N_observation``: for each speaker, facts about them written by the
dataset's authors, each with the turn(s) it came from. It comes as one JSON file per
conversation (``data/locomo10.zip``) or as one JSON list (``data/locomo10.json``, where a
conversation nests its sessions under ``conversation`` and its observations under
``observation`` and is named by ``sample_id``). Both read the same here.

Each session with observations becomes two cases (per part, when ``_locomo_parts`` cuts
it), one from each speaker's side: that speaker is the current user (``role=user`` with
their name), the other a named human on the assistant role. Gold facts are the
observations, keywords are chosen by ``_locomo_cases.choose_keywords``, earlier turns go
into ``history`` as far as they fit. This module reads the data.
"""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hy_eval._json import JsonTextError, loads_untrusted
from hy_eval.conversation import MessageError, normalise_messages
from hy_eval.harness.datasets._locomo_limits import (
    MAX_DOCUMENTS,
    MAX_NAME_CHARS,
    MAX_SESSION_DIGITS,
    MAX_TEXT_CHARS,
    Limits,
    LocomoError,
    cut,
    read_file,
    read_member,
    shown,
    zip_members,
)
from hy_eval.harness.text import fold, word_set
from hy_eval.memory._extract import MAX_FACT_CHARS, MAX_FACTS

#: Characters of rendered earlier turns a case may carry as history (whole session parts,
#: the latest first). A LoCoMo session renders to about 3,000 characters, so this is
#: about two sessions: with the extraction prompt (about 3,000 characters), the session
#: itself and the answer it stays well inside the embedded model's 8,192-token context.
HISTORY_CHARS = 6000
SUITE_FILE = "locomo.jsonl"
TAGS = ("locomo", "auto_labelled")

#: Words LoCoMo's observations use for narration ("... the day before the conversation"),
#: never content a model's fact would repeat: no keyword.
NARRATION_WORDS = frozenset(["conversation", "mentioned", "recently", "currently", "lately"])

#: Common English verbs, adjectives, adverbs and time words: a keyword only when a fact
#: has no other candidate, since a model's paraphrase rarely keeps them ("finds it
#: overwhelming" -> "is overwhelmed", "loves" -> "enjoys").
GENERIC_WORDS = word_set(
    """
    able ago along always around away back bad best better big bring brings came come
    comes day days different difference doing done enjoy enjoyed enjoys enjoying
    excited experience feel feeling feelings feels felt find finding finds forward free
    fun get gets getting give given gives go goes going good got great hang happy hard
    help helped helping helps important importance keep keeps kind last like liked likes
    little long look looking lot lots love loved loves loving made make makes making
    many month months much new next nice old one part people place plan planning plans
    positive really say see seeing sense share shared shares something start started
    starting stay still take takes taking tell things think thinks time times today
    together took tough tried try trying use used way week weeks well went want wants
    work worked working works year years
    """
)

_SESSION_RE = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class Turn:
    speaker: str
    text: str
    caption: str | None = None
    #: LoCoMo's turn id (``D3:12``), which observations cite as their evidence.
    dia_id: str | None = None

    @property
    def content(self) -> str:
        """The turn's text with its image, if any, as its caption."""
        image = f"[shares an image: {self.caption}]" if self.caption else ""
        return " ".join(p for p in (self.text.strip(), image) if p)


@dataclass(frozen=True)
class Observation:
    text: str
    #: The ``dia_id`` of the turns it came from (LoCoMo writes one, a list, or a few in
    #: one string: ``"D26:14, D26:34"``).
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class Session:
    number: int
    turns: tuple[Turn, ...]
    #: Speaker -> their observations in this session, in the data's order.
    observations: dict[str, tuple[Observation, ...]]


@dataclass(frozen=True)
class Conversation:
    #: The conversation's name in case ids: ``sample_id`` without ``conv-``, else the
    #: file's name without ``.json`` (``26`` either way for LoCoMo's conversation 26).
    key: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    #: Where it was read (file, zip member, list item): errors found later name it.
    where: str = ""


@dataclass(frozen=True)
class KeywordChoice:
    keywords: tuple[str, ...]
    #: ``distinctive``: no other fact of the case holds all the keywords; ``shared``: some
    #: other fact does (two keywords could not tell them apart); ``fallback``: the fact
    #: had no content word left, so its longest word (a stop word) is used.
    kind: str


@dataclass
class ImportStats:
    conversations: int = 0
    sessions: int = 0
    sessions_with_observations: int = 0
    cases: int = 0
    observations: int = 0
    gold_facts: int = 0
    duplicates: int = 0
    dropped: int = 0
    #: Observations longer than an answer's fact holds (``MAX_FACT_CHARS``): shortened at
    #: a clause boundary, with keywords chosen on the shortened text, or dropped when no
    #: cut that fits gets keywords (``_locomo_cases.fit_fact_text``).
    shortened: int = 0
    too_long: int = 0
    #: Observations dropped because their text reads as another subject than the
    #: speaker LoCoMo lists them under (``_locomo_cases.reads_as_its_subject``).
    other_subject: int = 0
    keyword_kinds: Counter[str] = field(default_factory=Counter)
    two_keywords: int = 0
    split_sessions: int = 0
    unplaced: int = 0
    over_limit: int = 0
    cases_with_history: int = 0
    history_parts: int = 0
    history_chars: int = HISTORY_CHARS
    max_facts: int = MAX_FACTS
    out: Path | None = None

    @property
    def text(self) -> str:
        k = self.keyword_kinds
        avg = self.history_parts / self.cases if self.cases else 0.0
        return "\n".join(
            [
                f"LoCoMo import: {self.conversations} conversations, {self.sessions} sessions, "
                f"{self.sessions_with_observations} with observations, {self.split_sessions} "
                f"of them cut into parts of at most {self.max_facts} observations "
                f"({self.over_limit} parts over that; {self.unplaced} observations citing no "
                "turn of their session)",
                f"cases: {self.cases}; gold facts: {self.gold_facts} "
                f"({self.observations} observations, each in both speakers' cases; "
                f"{self.duplicates} repeated observations merged)",
                f"keywords: {k['distinctive']} distinctive, {k['shared']} shared with another "
                f"fact of the case, {k['fallback']} fell back to a stop word, "
                f"{self.dropped} facts dropped (no word to use); "
                f"{self.two_keywords} facts need two keywords",
                f"long texts: {self.shortened + self.too_long} observations over the "
                f"{MAX_FACT_CHARS} characters an answer's fact holds: {self.shortened} "
                "shortened at a clause boundary (keywords chosen on the shortened text), "
                f"{self.too_long} dropped (no such cut)",
                f"subjects: {self.other_subject} observations dropped whose text reads as "
                "about someone other than the speaker LoCoMo lists them under",
                f"history: {self.cases_with_history} cases carry earlier turns, {avg:.2f} "
                f"session parts per case on average (limit {self.history_chars} characters)",
                f"wrote {self.out}",
            ]
        )


# ---------------------------------------------------------------------------------------
# Reading


def read_conversations(path: Path, limits: Limits | None = None) -> list[Conversation]:
    """Every conversation in ``path``: a folder of JSON files (searched recursively), the
    LoCoMo zip, or one JSON file holding a conversation or a list of them. ``limits``
    bounds what is read (the defaults of ``_locomo_limits`` when not given)."""
    limits = limits or Limits().start()
    convs: list[Conversation] = []
    seen: dict[str, str] = {}
    for where, stem, data in _documents(path, limits):
        items = data if isinstance(data, list) else [data]
        for i, item in enumerate(items):
            label = f"{where}[{i}]" if isinstance(data, list) else where
            fallback = f"{stem}-{i + 1}" if isinstance(data, list) else stem
            conv = parse_conversation(item, label, fallback)
            if conv.key in seen:
                raise LocomoError(
                    f"{label}: conversation {shown(conv.key)} again (first in {seen[conv.key]})"
                )
            seen[conv.key] = label
            convs.append(conv)
            limits.check_time(label)
    if not convs:
        raise LocomoError(f"{path}: no LoCoMo conversations (.json files) found")
    return sorted(convs, key=_conversation_order)


def _conversation_order(conv: Conversation) -> tuple[bool, int, str, str]:
    """In conversation order (26 before 100), whatever order the files or list had; a
    number is compared by its length and digits, never converted (it may be long)."""
    digits = conv.key.lstrip("0") if conv.key.isdigit() else ""
    return (not conv.key.isdigit(), len(digits), digits, conv.key)


def _documents(path: Path, limits: Limits) -> Iterator[tuple[str, str, Any]]:
    """``(where, file stem, parsed JSON)`` for each JSON document of ``path``, read one at
    a time within ``limits``."""
    if path.is_dir():
        for f in _json_files(path, limits):
            yield str(f), f.stem, _parse_json(read_file(f, str(f), limits), str(f))
    elif zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as z:
                infos = sorted(zip_members(z, str(path)), key=lambda i: i.filename)
                for info in infos:
                    name = info.filename
                    base = name.rsplit("/", 1)[-1]
                    if (
                        name.endswith(".json")
                        and not base.startswith(".")
                        and ("__MACOSX" not in name)
                    ):
                        where = f"{path}:{name}"
                        raw = read_member(z, info, where, limits)
                        yield where, base.removesuffix(".json"), _parse_json(raw, where)
        except (zipfile.BadZipFile, OSError) as exc:
            raise LocomoError(f"{path}: cannot read the zip ({exc})") from None
    elif path.is_file():
        yield str(path), path.stem, _parse_json(read_file(path, str(path), limits), str(path))
    else:
        raise LocomoError(f"{path}: no such file or folder")


def _json_files(folder: Path, limits: Limits) -> list[Path]:
    """The folder's ``.json`` files (not hidden), refused past ``MAX_DOCUMENTS`` before
    any is read."""
    found: list[Path] = []
    try:
        for p in folder.rglob("*.json"):
            if p.name.startswith(".") or not p.is_file():
                continue
            found.append(p)
            if len(found) > MAX_DOCUMENTS:
                raise LocomoError(
                    f"{folder}: more than {MAX_DOCUMENTS:,} .json files, over the limit"
                )
            limits.check_time(str(folder))
    except OSError as exc:
        raise LocomoError(f"{folder}: cannot list ({exc.strerror or exc})") from None
    return sorted(found)


def _parse_json(raw: bytes, where: str) -> Any:
    try:
        return loads_untrusted(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise LocomoError(f"{where}: not UTF-8 ({exc.reason})") from None
    except JsonTextError as exc:
        raise LocomoError(f"{where}: {exc}") from None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def parse_conversation(data: Any, where: str, fallback_key: str) -> Conversation:
    """One conversation, flat (the zip's files) or nested (``locomo10.json``)."""
    if not isinstance(data, dict):
        raise LocomoError(f"{where}: a conversation must be a JSON object")
    body, obs = data, data
    if isinstance(data.get("conversation"), dict):
        body, obs = data["conversation"], data.get("observation") or {}
        if not isinstance(obs, dict):
            raise LocomoError(
                f"{where}: observation: must be an object of session_N_observation entries"
            )
    sample = data.get("sample_id")
    key = _slug(str(sample).removeprefix("conv-")) if sample is not None else _slug(fallback_key)
    if not key:
        raise LocomoError(f"{where}: sample_id: no letters or digits to name the conversation")
    speakers = _speakers(body, where)
    sessions = []
    for k, turns in body.items():
        m = _SESSION_RE.match(k)
        if m:
            if len(m.group(1)) > MAX_SESSION_DIGITS:
                raise LocomoError(
                    f"{where}: {cut(k)}: a session number of {len(m.group(1)):,} digits "
                    f"(at most {MAX_SESSION_DIGITS})"
                )
            n = int(m.group(1))
            sessions.append(
                Session(
                    n,
                    _turns(turns, f"{where}: {k}", speakers),
                    _observations(
                        obs.get(f"session_{n}_observation"), f"{where}: {k}_observation", speakers
                    ),
                )
            )
    if not sessions:
        raise LocomoError(f"{where}: no session_N turns")
    return Conversation(key, speakers, tuple(sorted(sessions, key=lambda s: s.number)), where)


def _speakers(body: dict[str, Any], where: str) -> tuple[str, str]:
    """``speaker_a`` and ``speaker_b``, stripped: two different names that a message may
    carry (not ``user``, no bracket or control character, not too long)."""
    a, b = body.get("speaker_a"), body.get("speaker_b")
    if not (isinstance(a, str) and isinstance(b, str) and a.strip() and b.strip()):
        raise LocomoError(f"{where}: speaker_a, speaker_b: two names are needed")
    for field_name, name in (("speaker_a", a), ("speaker_b", b)):
        if len(name) > MAX_NAME_CHARS:
            raise LocomoError(
                f"{where}: {field_name}: a name of {len(name):,} characters "
                f"(at most {MAX_NAME_CHARS})"
            )
        try:
            # The rules every message's name follows, checked once here, where the field
            # can still be named, not when the first case is built.
            normalise_messages([{"role": "user", "name": name, "content": "."}])
        except MessageError as exc:
            raise LocomoError(f"{where}: {field_name}: {exc.problem}") from None
    if fold(a.strip()) == fold(b.strip()):
        raise LocomoError(f"{where}: speaker_a, speaker_b: the same name {a!r} twice")
    return (a.strip(), b.strip())


def _text(value: str, where: str, what: str) -> str:
    if len(value) > MAX_TEXT_CHARS:
        raise LocomoError(
            f"{where}: {what} of {len(value):,} characters, over the limit of {MAX_TEXT_CHARS:,}"
        )
    return value


def _turns(items: Any, where: str, speakers: tuple[str, str]) -> tuple[Turn, ...]:
    if not isinstance(items, list):
        raise LocomoError(f"{where}: a session must be a list of turns")
    out = []
    for i, t in enumerate(items):
        if not isinstance(t, dict):
            raise LocomoError(f"{where}.{i}: a turn must be an object")
        speaker, text, caption = t.get("speaker"), t.get("text", ""), t.get("blip_caption")
        if not isinstance(speaker, str) or speaker.strip() not in speakers:
            raise LocomoError(
                f"{where}.{i}.speaker: {shown(speaker)} is neither {' nor '.join(speakers)}"
            )
        if not isinstance(text, str) or not (caption is None or isinstance(caption, str)):
            raise LocomoError(f"{where}.{i}: text and blip_caption must be strings")
        _text(text, f"{where}.{i}.text", "a turn")
        _text(caption or "", f"{where}.{i}.blip_caption", "a caption")
        dia_id = t.get("dia_id")
        turn = Turn(
            speaker.strip(),
            text,
            caption.strip() if caption and caption.strip() else None,
            dia_id if isinstance(dia_id, str) else None,
        )
        if turn.content:
            out.append(turn)
    return tuple(out)


def _observations(
    data: Any, where: str, speakers: tuple[str, str]
) -> dict[str, tuple[Observation, ...]]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise LocomoError(f"{where}: observations must be an object of speaker -> list")
    out: dict[str, tuple[Observation, ...]] = {}
    for speaker, items in data.items():
        place = f"{where}.{cut(speaker)}"
        if speaker.strip() not in speakers:
            raise LocomoError(f"{place}: not a speaker ({' or '.join(speakers)})")
        if not isinstance(items, list):
            raise LocomoError(f"{place}: must be a list of [fact, evidence]")
        found = []
        for i, item in enumerate(items):
            text = item[0] if isinstance(item, list) and item else item
            if not isinstance(text, str):
                raise LocomoError(f"{place}.{i}: a fact must be a string or [fact, evidence]")
            _text(text, f"{place}.{i}", "an observation")
            cited = item[1] if isinstance(item, list) and len(item) > 1 else []
            cited = cited if isinstance(cited, list) else [cited]
            evidence = tuple(
                e for c in cited if isinstance(c, str) for e in re.split(r"[,;\s]+", c) if e
            )
            if text.strip():
                found.append(Observation(" ".join(text.split()), evidence))
        out[speaker.strip()] = tuple(found)
    return out

"""Labelled cases: the JSONL format of ``datasets/<suite>/*.jsonl`` (rule E1), validated
with pydantic. docs/datasets.md documents every field.

Validation reports every problem as ``file:line: field: message``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from hy_eval._json import JsonTextError, loads_untrusted
from hy_eval.conversation import ChatMessage, MessageError, normalise_messages, resolve_user_name
from hy_eval.conversation._lookalike import skeleton
from hy_eval.harness.datasets._expect import ExistingMemory, Expect, check_expect_ids
from hy_eval.memory import Speakers
from hy_eval.memory._names import normalise_text

RULE_IDS = frozenset(
    [f"M{i}" for i in range(1, 8)]
    + [f"D{i}" for i in range(1, 7)]
    + [f"A{i}" for i in range(1, 9)]
    + [f"P{i}" for i in range(1, 5)]
    + [f"R{i}" for i in range(1, 4)]
    + [f"H{i}" for i in range(1, 6)]
    + [f"E{i}" for i in range(1, 8)]
)
DATASETS_DIR = Path(__file__).resolve().parents[3] / "datasets"
MAX_LINE_BYTES = 200_000
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Case(_Strict):
    """One labelled multi-speaker case."""

    id: str
    lang: Literal["en", "zh"]
    rules: list[str] = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    user_id: str = "user"
    history: list[Any] = Field(default_factory=list)
    existing: list[ExistingMemory] = Field(default_factory=list)
    messages: list[Any] = Field(min_length=1)
    system: str | None = None
    #: Other forms of a speaker's name ({"王伟": ["Wang Wei"]}): they count as that
    #: speaker when facts are scored and in the guard (A8).
    aliases: dict[str, list[str]] = Field(default_factory=dict)
    expect: Expect

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _ID_RE.match(v):
            raise ValueError("id must be letters, digits, '.', '_' or '-' (at most 81)")
        return v

    @field_validator("rules")
    @classmethod
    def _rules(cls, v: list[str]) -> list[str]:
        unknown = [r for r in v if r not in RULE_IDS]
        if unknown:
            raise ValueError(f"unknown rule id(s) {', '.join(unknown)}")
        return v

    #: Computed once at validation: the normalised messages and the people with their
    #: aliases (scoring, the guard and the runner read them from here).
    _normalised: tuple[ChatMessage, ...] = PrivateAttr(default=())
    # None until the validator below sets it: a default_factory would make pydantic
    # inspect the factory's signature on every case it validates: 0.19 ms a case against
    # 0.11 ms without (best of 15 passes over en_v2.jsonl).
    _speakers: Speakers | None = PrivateAttr(default=None)
    _named: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        try:
            msgs = normalise_messages(self.messages, system=self.system)
        except MessageError as exc:
            raise ValueError(f"messages: {exc}") from None
        if self.history:
            try:
                normalise_messages(self.history)
            except MessageError as exc:
                raise ValueError(f"history: {exc}") from None
        names = {m.name for m in msgs if m.is_named_human and m.name}
        subjects = [("facts", i, f.subject) for i, f in enumerate(self.expect.facts)] + [
            ("absent", i, a.subject) for i, a in enumerate(self.expect.absent)
        ]
        for kind, i, subject in subjects:
            if subject not in ("user", "assistant") and subject not in names:
                raise ValueError(
                    f"expect.{kind}.{i}.subject: unknown subject {subject!r} "
                    f"(use user, assistant or a speaker: {', '.join(sorted(names)) or 'none'})"
                )
        user = resolve_user_name(msgs).name
        _check_aliases(self.aliases, user, names)
        ids = [m.id for m in self.existing]
        if len(ids) != len(set(ids)):
            raise ValueError("existing: duplicate memory ids")
        check_expect_ids(self.expect, ids)
        if (
            self.expect.profile
            and self.expect.profile.name
            and user
            and (self.expect.profile.name != user)
        ):
            raise ValueError(
                f"expect.profile.name: {self.expect.profile.name!r} is not the user's name {user!r}"
            )
        named: list[str] = []
        for m in msgs:
            if m.is_named_human and m.name and m.name not in named:
                named.append(m.name)
        self._normalised = tuple(msgs)
        self._named = tuple(named)
        self._speakers = Speakers.of(user, named, self.aliases)
        return self

    @property
    def normalised(self) -> list[ChatMessage]:
        """The case's messages, normalised (with its system prompt)."""
        return list(self._normalised)

    @property
    def speakers(self) -> Speakers:
        """The case's people with their aliases, as scoring and the guard read them."""
        return self._speakers if self._speakers is not None else Speakers()

    @property
    def named_speakers(self) -> list[str]:
        """The named humans, in order of their first message."""
        return list(self._named)


def _check_aliases(aliases: dict[str, list[str]], user: str | None, names: set[str]) -> None:
    """Aliases belong to speakers, are not blank and name nobody else, nor look like
    another's name (compared by ``skeleton``: ``Tіm`` with a Cyrillic ``і`` names Tim)."""
    people = names | ({user} if user else set())
    owner: dict[str, str] = {skeleton(normalise_text(p)): p for p in people}
    for who, forms in aliases.items():
        if who not in people:
            raise ValueError(
                f"aliases.{who}: not a speaker (speakers: {', '.join(sorted(people)) or 'none'})"
            )
        for alias in forms:
            key = skeleton(normalise_text(alias))
            if not key:
                raise ValueError(f"aliases.{who}: aliases must not be blank")
            if owner.setdefault(key, who) != who:
                raise ValueError(f"aliases.{who}: {alias!r} already names {owner[key]!r}")


class HistoryCase(_Strict):
    """One L1_RAW text with its expected parse (suite ``history``; no model calls)."""

    id: str
    lang: Literal["en", "zh"]
    rules: list[str] = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    text: str
    history_limit: int | None = Field(default=None, ge=1)
    expect: HistoryExpect

    @field_validator("rules")
    @classmethod
    def _rules(cls, v: list[str]) -> list[str]:
        return Case._rules(v)


class HistoryMessage(_Strict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    name: str | None = None


class HistoryExpect(_Strict):
    user_name: str | None = None
    messages: list[HistoryMessage]
    #: The history context (H5) for ``history_limit``, when the case sets one.
    context: list[HistoryMessage] | None = None


HistoryCase.model_rebuild()


class DatasetError(Exception):
    """Problems in dataset files; ``problems`` holds one ``file:line: field: message`` each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{problems[0]}{more}")


@dataclass(frozen=True)
class CaseRef:
    """What filtering needs of a case, without the case: 10,000 refs cost little memory."""

    id: str
    lang: str
    rules: tuple[str, ...]
    tags: tuple[str, ...]
    file: Path
    line: int


@dataclass(frozen=True)
class Suite:
    """A validated suite. ``refs`` is small; cases are parsed again, one at a time, by
    ``iter_cases`` so a large suite never sits in memory as case objects."""

    name: str
    files: tuple[Path, ...]
    refs: tuple[CaseRef, ...]
    kind: Literal["memory", "history"]

    @cached_property
    def hash(self) -> str:
        """SHA-256 over the suite's files (names and bytes), in name order; read once,
        when first asked (a run checks that the files do not change under it)."""
        h = hashlib.sha256()
        for f in self.files:
            h.update(f.name.encode())
            h.update(b"\0")
            h.update(f.read_bytes())
        return h.hexdigest()

    def iter_cases(self, ids: set[str] | None = None) -> Iterator[Any]:
        """The cases (those in ``ids`` when given), in file order."""
        for ref, text in self.iter_lines(ids):
            yield self.parse_case(ref, text)

    def iter_lines(self, ids: set[str] | None = None) -> Iterator[tuple[CaseRef, str]]:
        """Each case's ref and JSON line text (those in ``ids``), in file order, unparsed:
        a run whose record is cached needs no more (``parse_case`` gives the case)."""
        wanted = {(r.file, r.line): r for r in self.refs if ids is None or r.id in ids}
        for f in self.files:
            for line, text, problem in iter_file(f, self.kind, validate=False):
                if problem is not None:
                    raise DatasetError([f"{problem} (the file changed during the run)"])
                ref = wanted.get((f, line))
                if ref is not None:
                    yield ref, text

    def parse_case(self, ref: CaseRef, text: str) -> Any:
        """The case of a line from ``iter_lines``."""
        model: type[BaseModel] = Case if self.kind == "memory" else HistoryCase
        try:
            case: Any = model.model_validate(loads_untrusted(text))
        except (ValueError, ValidationError):
            raise DatasetError(
                [f"{ref.file}:{ref.line}: the case changed during the run; validate it"]
            ) from None
        if case.id != ref.id:
            raise DatasetError([f"{ref.file}:{ref.line}: the file changed during the run"])
        return case

    @property
    def cases(self) -> tuple[Any, ...]:
        """Every case, parsed (for small suites, tests and reports)."""
        return tuple(self.iter_cases())


def _format_error(path: Path, lineno: int, exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "case"
        msg = err["msg"].removeprefix("Value error, ")
        if ": " in msg and loc == "case" and msg.split(": ", 1)[0].replace(".", "").isalnum():
            loc, msg = msg.split(": ", 1)
        out.append(f"{path}:{lineno}: {loc}: {msg}")
    return out


def iter_file(
    path: Path, kind: Literal["memory", "history"], *, validate: bool = True
) -> Iterator[tuple[int, Any, str | None]]:
    """``(line, case, None)`` for each valid case of a JSONL file and ``(line, None,
    problem)`` for each problem, reading one line at a time. With ``validate=False`` the
    case is the line's text, checked only as far as text (for a suite validated already;
    ``parse_case`` does the rest)."""
    model: type[BaseModel] = Case if kind == "memory" else HistoryCase
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield 0, None, f"{path}:0: file: cannot read ({exc.strerror})"
        return
    crlf_reported = False
    any_content = False
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                yield (
                    1,
                    None,
                    f"{path}:1: file: starts with a UTF-8 byte order mark; save without BOM",
                )
                raw = raw[3:]
            if raw.endswith(b"\r\n") and not crlf_reported:
                crlf_reported = True
                yield (
                    lineno,
                    None,
                    f"{path}:{lineno}: file: Windows line endings (CRLF); use LF only",
                )
            if len(raw) > MAX_LINE_BYTES:
                any_content = True
                yield lineno, None, f"{path}:{lineno}: line: longer than {MAX_LINE_BYTES} bytes"
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                any_content = True
                yield lineno, None, f"{path}:{lineno}: file: not UTF-8 ({exc.reason})"
                continue
            if not line.strip():
                continue
            any_content = True
            if not validate:
                yield lineno, line, None
                continue
            try:
                # Without its line ending, so an unclosed string reads as unterminated.
                data = loads_untrusted(line.rstrip("\r\n"))
            except JsonTextError as exc:
                yield lineno, None, f"{path}:{lineno}: {exc}"
                continue
            if not isinstance(data, dict):
                yield lineno, None, f"{path}:{lineno}: case: a case must be a JSON object"
                continue
            try:
                yield lineno, model.model_validate(data), None
            except ValidationError as exc:
                for problem in _format_error(path, lineno, exc):
                    yield lineno, None, problem
    if not any_content:
        yield 1, None, f"{path}:1: file: empty file (no cases)"


#: The file in a suite's folder that declares what the suite is (docs/datasets.md).
SUITE_FILE = "suite.toml"
SUITE_KINDS = ("memory", "history")


def suite_kind(folder: str | Path) -> Literal["memory", "history"]:
    """The kind declared by ``suite.toml`` in a suite's folder (a folder path, or a suite
    name under ``datasets/``): ``kind = "history"`` or ``"memory"``. Without the file the
    suite is a memory suite."""
    path = Path(folder)
    if not path.is_dir():
        path = DATASETS_DIR / str(folder)
    config = path / SUITE_FILE
    if not config.is_file():
        return "memory"
    from hy_eval._toml import read_toml

    def problem(message: str) -> DatasetError:
        return DatasetError([f"{config}:0: {message}"])

    try:
        kind = read_toml(config, "suite file").get("kind", "memory")
    except ValueError as exc:
        raise problem(f"file: {exc}") from None
    if kind not in SUITE_KINDS:
        raise problem(f"kind: {kind!r} is not one of {', '.join(SUITE_KINDS)}")
    return "history" if kind == "history" else "memory"


def resolve_suite(name_or_path: str, root: Path | None = None) -> tuple[str, list[Path]]:
    """A suite name under ``datasets/``, a folder, or one JSONL file."""
    base = root or DATASETS_DIR
    path = Path(name_or_path)
    if path.is_file():
        return path.parent.name, [path]
    if path.is_dir():
        folder = path
    else:
        folder = base / name_or_path
        if not folder.is_dir():
            known = (
                ", ".join(sorted(p.name for p in base.iterdir() if (p / "suite.toml").is_file()))
                or "none"
            )
            raise DatasetError([f"{name_or_path}:0: suite: unknown suite (known: {known})"])
    files = sorted(p for p in folder.glob("*.jsonl") if not p.name.startswith("_"))
    if not files:
        raise DatasetError([f"{folder}:0: suite: no .jsonl files"])
    return folder.name, files


def load_suite(name_or_path: str, root: Path | None = None) -> Suite:
    """Load and validate a suite; raises ``DatasetError`` listing every problem."""
    name, files = resolve_suite(name_or_path, root)
    kind = suite_kind(files[0].parent)
    problems: list[str] = []
    refs: list[CaseRef] = []
    seen: dict[str, str] = {}
    for f in files:
        for lineno, case, problem in iter_file(f, kind):
            if problem is not None:
                problems.append(problem)
                continue
            where = f"{f}:{lineno}"
            if case.id in seen:
                problems.append(
                    f"{where}: id: duplicate case id {case.id!r} (first at {seen[case.id]})"
                )
                continue
            seen[case.id] = where
            refs.append(CaseRef(case.id, case.lang, tuple(case.rules), tuple(case.tags), f, lineno))
    if problems:
        raise DatasetError(problems)
    return Suite(name, tuple(files), tuple(refs), kind)


def filter_cases(cases: Iterable[Any], spec: str | None) -> list[Any]:
    """``lang=zh,tag=adversarial,rule=A2,id=ms-en-0001``: every condition must hold;
    repeat a key for alternatives (``tag=a,tag=b`` means a or b). ``id=@FILE`` takes the
    ids listed in FILE, one a line (``#`` starts a comment), as a committed sample
    (datasets/multi_speaker/samples/)."""
    out = list(cases)
    if not spec:
        return out
    conditions: dict[str, set[str]] = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in ("lang", "tag", "rule", "id"):
            raise ValueError(f"bad filter {part!r}: use lang=, tag=, rule= or id=")
        value = value.strip()
        if key == "id" and value.startswith("@"):
            conditions.setdefault(key, set()).update(_ids_file(value[1:]))
            continue
        conditions.setdefault(key, set()).add(value)
    for key, values in conditions.items():
        if key == "lang":
            out = [c for c in out if c.lang in values]
        elif key == "tag":
            out = [c for c in out if values & set(c.tags)]
        elif key == "rule":
            out = [c for c in out if values & set(c.rules)]
        else:
            out = [c for c in out if c.id in values]
    return out


def _ids_file(path: str) -> set[str]:
    """The case ids of an ids file: one a line, blank lines and ``#`` comments skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"bad filter id=@{path}: cannot read it ({exc})") from None
    ids = {ln.split("#", 1)[0].strip() for ln in text.splitlines()}
    ids.discard("")
    if not ids:
        raise ValueError(f"bad filter id=@{path}: it lists no case id")
    return ids


T = TypeVar("T")


def spread(cases: list[T], n: int) -> list[T]:
    """``n`` of ``cases`` spread evenly over their order (all of them when there are
    fewer): case ``floor(i * len / n)`` for i < n. The same suite and ``n`` always give the
    same cases, and every file of a suite is represented in proportion to its size."""
    if n >= len(cases):
        return list(cases)
    return [cases[i * len(cases) // n] for i in range(n)]


def select_cases(
    refs: Iterable[T], spec: str | None, sample: int | None, limit: int | None
) -> list[T]:
    """The cases a run takes, in this order: ``filter_cases`` by ``spec``, then ``spread``
    to ``sample`` cases, then the first ``limit``. Raises ``ValueError`` for a bad filter."""
    cases = filter_cases(refs, spec)
    if sample is not None:
        cases = spread(cases, sample)
    return cases if limit is None else cases[:limit]

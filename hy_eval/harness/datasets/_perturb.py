"""Metamorphic perturbations of a case: pure, seeded functions from a case to
a case with its gold remapped, so that a verdict must not change.

Each function takes a case and a seed and returns a ``Perturbed`` (the new case and a map
from the new case's subjects to the original's, for diffs) or a ``Skip`` naming why the
case cannot be perturbed soundly. The same case and seed always give the same result.

- ``rename``: every speaker renamed consistently from a name bank (the name field, the
  text, the gold, aliases, existing memories, history).
- ``swap_perspective``: one named human becomes the current user and the user that named
  human (M1, M2, M6); gold subjects and the L0 expectation remapped.
- ``anthropic``: the same conversation in Anthropic content-block form (M5).
- ``name_line``: the user's name given only in the text ("My name is Tim.") instead of
  by the name field (D5, P2).
- ``order``: consecutive messages of distinct named humans reordered where each one's
  gold facts are stated in that person's own message (docs/datasets.md gives the rule).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from hy_eval._terminal import echo
from hy_eval.harness.datasets._anthropic_form import ANTHROPIC_BLOCKS, has_blocks, to_anthropic
from hy_eval.harness.datasets._keywords import contains_all, contains_any, members, without_name
from hy_eval.harness.datasets._rename_text import replace_names, with_name_forms, word_occurs
from hy_eval.harness.datasets._schema import Case, CaseRef, Suite, load_suite

#: The name bank: (name, another form of it for aliases), by kind. Latin names go into
#: Chinese cases too (a Latin name inside Chinese text); common-word names are words as
#: well (May, Will, 春天); titled names carry an English or Chinese title.
NAME_BANK: dict[str, dict[str, tuple[tuple[str, str], ...]]] = {
    "cjk": {
        "any": (
            ("郭子涵", "Guo Zihan"),
            ("何嘉怡", "He Jiayi"),
            ("宋子轩", "Song Zixuan"),
            ("许晨阳", "Xu Chenyang"),
            ("马丽丽", "Ma Lili"),
            ("邵文博", "Shao Wenbo"),
        ),
    },
    "latin": {
        "any": (
            ("Oliver", "奥利弗"),
            ("Freya", "弗蕾雅"),
            ("Mateo", "马特奥"),
            ("Niamh", "尼芙"),
            ("Tobias", "托比亚斯"),
            ("Anouk", "阿努克"),
        ),
    },
    "common_word": {
        "en": (
            ("May", "Maisie"),
            ("Will", "William"),
            ("Hope", "Hopey"),
            ("Summer", "Sunny"),
            ("Grace", "Gracie"),
            ("Rose", "Rosie"),
        ),
        "zh": (
            ("春天", "Chuntian"),
            ("阳光", "Yangguang"),
            ("海洋", "Haiyang"),
            ("文静", "Wenjing"),
            ("秋雨", "Qiuyu"),
        ),
    },
    "titled": {
        "en": (
            ("Dr. Ada Brooks", "Ada Brooks"),
            ("Professor Lind", "Prof. Lind"),
            ("Captain Moreau", "Capt. Moreau"),
            ("Mrs. Okafor", "Ms Okafor"),
        ),
        "zh": (("周医生", "Dr. Zhou"), ("林老师", "Teacher Lin"), ("陈先生", "Mr. Chen")),
    },
}
#: The languages a kind of name is drawn for (CJK names only in Chinese cases).
KINDS = {"en": ("latin", "common_word", "titled"), "zh": ("cjk", "latin", "common_word", "titled")}


@dataclass(frozen=True)
class Perturbed:
    case: Case
    #: Subject of the perturbed case -> subject of the original ("user", a name).
    subjects: dict[str, str] = field(default_factory=dict)
    #: What was done, for the record (names drawn, messages moved).
    note: str = ""


@dataclass(frozen=True)
class Skip:
    reason: str


Result = Perturbed | Skip


def _rng(name: str, seed: int, case: Case) -> random.Random:
    # A string seed: the same (perturbation, seed, case) always draws the same.
    return random.Random(f"{name}:{seed}:{case.id}")


def _validated(data: dict[str, Any]) -> Case | Skip:
    try:
        return Case.model_validate(data)
    except ValidationError as exc:
        return Skip(f"not a valid case after the change ({exc.errors()[0]['msg']})")


# --- text substitution -----------------------------------------------------------------


def _substitute(value: Any, replace: Callable[[str], str]) -> Any:
    """Every string in ``value`` (nested lists and dicts) passed through ``replace``."""
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, list):
        return [_substitute(v, replace) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, replace) for k, v in value.items()}
    return value


def _all_text(case: Case) -> str:
    return json.dumps(case.model_dump(mode="json"), ensure_ascii=False)


def _occurs(name: str, text: str) -> bool:
    """Anywhere, in any case, inside a word too: a fresh name shares no letters' run with
    the case's text."""
    return name.casefold() in text.casefold()


# --- rename ----------------------------------------------------------------------------


def _people(case: Case) -> list[str]:
    user = case.speakers.user_name
    return ([user] if user else []) + [n for n in case.named_speakers if n != user]


def _homonyms(case: Case, text: str) -> list[tuple[str, str]]:
    """Common-word names of the bank that are a word of this conversation: in lower case
    as a whole word ("may", "will", "春天"), but not in the name's own form as a whole word
    ("May I?" would read as the new speaker), not any name or alias of the case (a speaker
    renamed to their own name is no rename), and with an other form that occurs nowhere."""
    names = {f.casefold() for p in _people(case) for f in case.speakers.forms_of(p)}
    out = []
    for new, other in NAME_BANK["common_word"][case.lang]:
        if new.casefold() in names or _occurs(other, text):
            continue
        if new.isascii():
            ok = word_occurs(text, new.lower()) and not word_occurs(text, new)
        else:
            ok = new in text
        if ok:
            out.append((new, other))
    return out


def _draw_names(case: Case, rng: random.Random) -> dict[str, tuple[str, str, str]] | None:
    """Old name -> (new name, its other form, kind). A common-word name that is also a
    word of this conversation (``_homonyms``) is taken first when the bank has one; every
    other new name occurs nowhere in the case and contains no other name."""
    text = _all_text(case)
    taken: list[str] = []
    out: dict[str, tuple[str, str, str]] = {}
    homonyms = _homonyms(case, text)
    for person in _people(case):
        pool: list[tuple[tuple[str, str], str]] = []
        if homonyms and not out:
            pool = [(e, "homonym") for e in homonyms]
        else:
            kind = rng.choice(KINDS[case.lang])
            bank = NAME_BANK[kind]
            pool = [(e, kind) for e in bank.get(case.lang, bank.get("any", ()))]
        rng.shuffle(pool)
        for (new, other), kind in pool:
            clash = [t for t in taken if new in t or t in new or other in t or t in other]
            fresh = kind == "homonym" or not (_occurs(new, text) or _occurs(other, text))
            if not clash and fresh:
                out[person] = (new, other, kind)
                taken += [new, other]
                break
        else:
            return None
    return out


def rename(case: Case, seed: int = 0) -> Result:
    """Every speaker (the user and each named human) renamed consistently, in every form
    the subject reader knows the name by (``with_name_forms``). A name is replaced only
    where it stands as that name (``_rename_text``: whole words with Unicode-aware bounds,
    common-word names such as May told from the word, Chinese forms other than full names
    only where the segmenter gives them as words, never inside a longer name)."""
    people = _people(case)
    if not people:
        return Skip("no named person to rename")
    drawn = _draw_names(case, _rng("rename", seed, case))
    if drawn is None:
        return Skip("the name bank has no fresh name for every speaker")
    mapping = {old: new for old, (new, _, _) in drawn.items()}
    for person, forms in case.aliases.items():
        if person in drawn:
            for form in forms:
                mapping[form] = drawn[person][1]
    owners = Counter(f for p in people for f in set(case.speakers.forms_of(p)))
    mapping = with_name_forms(mapping, {f for f, n in owners.items() if n > 1})
    data = case.model_dump(mode="json")
    data["aliases"] = {
        mapping.get(p, p): [mapping.get(f, f) for f in forms] for p, forms in case.aliases.items()
    }

    def replace(text: str) -> str:
        return replace_names(text, mapping, people)

    for key in ("messages", "history", "existing", "system", "expect"):
        data[key] = _substitute(data[key], replace)
    new = _validated(data)
    if isinstance(new, Skip):
        return new
    subjects = {new_name: old for old, (new_name, _, _) in drawn.items()}
    subjects["user"] = "user"
    note = ", ".join(f"{o} -> {n} ({k})" for o, (n, _, k) in drawn.items())
    return Perturbed(new, subjects, note)


# --- swap_perspective ------------------------------------------------------------------


def swap_perspective(case: Case, seed: int = 0) -> Result:
    """A named human B becomes the current user, the user A becomes the named human A.
    Gold subjects swap (user <-> B); the L0 expectation becomes B's name, with A's facts as
    what must not enter B's L0 (P3). Skipped where that is not sound: no user name (A would
    become the AI assistant), no named human, existing memories (their text says "the
    user" of A's store) or tool messages."""
    user = case.speakers.user_name
    others = [n for n in case.named_speakers if n != user]
    if not user:
        return Skip("the user has no name: swapped, they would read as the AI assistant")
    if not others:
        return Skip("no named human to take the user's place")
    if case.existing:
        return Skip("existing memories are written from the user's side")
    if any(isinstance(m, dict) and m.get("role") == "tool" for m in case.messages) or any(
        has_blocks(m) for m in case.messages
    ):
        return Skip("tool messages answer the user's side")
    b = _rng("swap_perspective", seed, case).choice(others)

    def swap(msg: Any) -> Any:
        if not isinstance(msg, dict):
            return msg
        if msg.get("role") == "user":
            return {**msg, "role": "assistant", "name": user}
        if msg.get("role") == "assistant" and msg.get("name") == b:
            return {**msg, "role": "user"}
        return msg

    def who(subject: str) -> str:
        return user if subject == "user" else "user" if subject == b else subject

    data = case.model_dump(mode="json")
    data["messages"] = [swap(m) for m in data["messages"]]
    data["history"] = [swap(m) for m in data["history"]]
    exp = data["expect"]
    for item in exp["facts"] + exp["absent"]:
        item["subject"] = who(item["subject"])
    b_forms = {f.casefold() for f in case.speakers.forms_of(b)}
    for item in exp["facts"]:
        item["keywords"] = without_name(item["keywords"], b_forms)
    if exp.get("profile") is not None:
        a_facts = [f for f in exp["facts"] if f["subject"] == user]
        b_text = " ".join(
            k for f in exp["facts"] if f["subject"] == "user" for k in members(f["keywords"])
        )
        # A speaker's name is no L0 leak: B's own name is the profile's name, and a name
        # in profile.absent could never fail otherwise (docs/datasets.md).
        names = {form.casefold() for n in (user, *others) for form in case.speakers.forms_of(n)}
        absent = [
            k
            for f in a_facts
            for k in members(f["keywords"])
            if k.casefold() not in b_text.casefold() and k.casefold() not in names
        ]
        exp["profile"] = {"name": b, "absent": list(dict.fromkeys(absent))}
    new = _validated(data)
    if isinstance(new, Skip):
        return new
    return Perturbed(new, {"user": b, user: "user"}, f"{b} <-> {user}")


# --- anthropic -------------------------------------------------------------------------


def anthropic(case: Case, seed: int = 0) -> Result:
    """The same conversation (and history) in Anthropic content-block form (M5). A case
    written in that form already (tool blocks, or nothing left to convert) is skipped: it
    would be the same case."""
    del seed  # nothing is drawn
    data = case.model_dump(mode="json")
    if any(has_blocks(m, ANTHROPIC_BLOCKS) for key in ("messages", "history") for m in data[key]):
        return Skip("already in Anthropic form")
    for key in ("messages", "history"):
        if not data[key]:
            continue
        converted = to_anthropic(data[key])
        if isinstance(converted, str):
            return Skip(f"{key}: {converted}")
        data[key] = converted
    if data["messages"] == case.messages and data["history"] == case.history:
        return Skip("already in Anthropic form")
    new = _validated(data)
    return new if isinstance(new, Skip) else Perturbed(new, {}, "Anthropic content blocks")


# --- name_line -------------------------------------------------------------------------

NAME_SENTENCE = {"en": "My name is {name}. ", "zh": "我叫{name}。"}


def name_line(case: Case, seed: int = 0) -> Result:
    """The user's name only in the text: the name field taken off every user message and
    "My name is Tim. " / "我叫Tim。" put before the first user message's text. The gold
    stays: who the user is comes from ``role`` (M6), and the user's own word gives L0's
    name (P2)."""
    del seed
    user = case.speakers.user_name
    if not user:
        return Skip("the user has no name field")
    if user in case.aliases:
        return Skip("the user's aliases need the name field")
    data = case.model_dump(mode="json")
    first = True
    for m in data["messages"]:
        if isinstance(m, dict) and m.get("role") == "user":
            m.pop("name", None)
            if first:
                if not isinstance(m.get("content"), str):
                    return Skip("the first user message is not plain text")
                m["content"] = NAME_SENTENCE[case.lang].format(name=user) + m["content"]
                first = False
    new = _validated(data)
    return new if isinstance(new, Skip) else Perturbed(new, {}, "name only in the text")


# --- order -----------------------------------------------------------------------------


def _text_of(msg: Any) -> str:
    c = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(c, str):
        return c
    return " ".join(p.get("text", "") for p in c or [] if isinstance(p, dict))


def _movable_blocks(case: Case) -> list[list[int]]:
    """Runs of two or more consecutive named-human messages, each from a different person,
    where every gold fact and absent check about a person of the run has its keywords
    either all in that person's own message or none anywhere in the run."""
    msgs = case.messages
    runs: list[list[int]] = []
    cur: list[int] = []
    for i, m in enumerate([*msgs, None]):
        named = isinstance(m, dict) and m.get("role") == "assistant" and m.get("name")
        if named and m["name"] not in {msgs[j]["name"] for j in cur}:
            cur.append(i)
            continue
        if len(cur) >= 2:
            runs.append(cur)
        cur = [i] if named else []
    checks = [(f.subject, f.keywords) for f in case.expect.facts]
    checks += [(a.subject, a.keywords) for a in case.expect.absent]
    sound = []
    for run in runs:
        own = {msgs[i]["name"]: _text_of(msgs[i]).casefold() for i in run}
        joined = " ".join(own.values())
        if all(
            subject not in own or contains_all(own[subject], kws) or not contains_any(joined, kws)
            for subject, kws in checks
        ):
            sound.append(run)
    return sound


def order(case: Case, seed: int = 0) -> Result:
    """Named humans' messages reordered within each movable run (``_movable_blocks``); the
    gold does not change."""
    runs = _movable_blocks(case)
    if not runs:
        return Skip("no run of named humans' messages that can be reordered soundly")
    rng = _rng("order", seed, case)
    data = case.model_dump(mode="json")
    moved = []
    for run in runs:
        perm = run[:]
        while perm == run:  # a real change: a run of two is swapped
            rng.shuffle(perm)
        for i, j in zip(run, perm, strict=True):
            data["messages"][i] = case.messages[j]
        moved.append(f"{run} -> {perm}")
    new = _validated(data)
    return new if isinstance(new, Skip) else Perturbed(new, {}, "; ".join(moved))


PERTURBATIONS: dict[str, Callable[[Case, int], Result]] = {
    "rename": rename,
    "swap_perspective": swap_perspective,
    "anthropic": anthropic,
    "name_line": name_line,
    "order": order,
}


def parse_perturbations(spec: str) -> list[str]:
    """``rename,order`` -> names, in order, each once; a one-line error for an unknown name."""
    names = list(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    unknown = [n for n in names if n not in PERTURBATIONS]
    if unknown or not names:
        raise ValueError(
            f"unknown perturbation {', '.join(unknown) or repr(spec)} "
            f"(known: {', '.join(PERTURBATIONS)})"
        )
    return names


def perturb(case: Case, name: str, seed: int = 0) -> Result:
    return PERTURBATIONS[name](case, seed)


@dataclass(frozen=True)
class PerturbedSuite(Suite):
    """A suite whose lines are the perturbed cases' JSON. ``refs`` holds only the cases
    that could be perturbed; ``skipped`` the others with the reason. The line text (and so
    the result cache's key) is the perturbed case's."""

    perturbation: str = ""
    seed: int = 0
    skipped: tuple[tuple[str, str], ...] = ()
    results: dict[str, Perturbed] = field(default_factory=dict, compare=False, hash=False)

    def iter_lines(self, ids: set[str] | None = None) -> Iterator[tuple[CaseRef, str]]:
        for ref, _ in super().iter_lines(ids):
            yield ref, self.results[ref.id].case.model_dump_json()


def perturb_suite(suite: Suite, refs: list[CaseRef], name: str, seed: int) -> PerturbedSuite:
    """``suite`` with the cases of ``refs`` perturbed by ``name``; the rest left out."""
    wanted = {r.id for r in refs}
    results: dict[str, Perturbed] = {}
    skipped: list[tuple[str, str]] = []
    for case in suite.iter_cases(wanted):
        out = perturb(case, name, seed)
        if isinstance(out, Skip):
            skipped.append((case.id, out.reason))
        else:
            results[case.id] = out
    kept = tuple(r for r in suite.refs if r.id in results)
    return PerturbedSuite(
        suite.name, suite.files, kept, suite.kind, name, seed, tuple(skipped), results
    )


def perturbation_counts(suite_name: str = "multi_speaker", seed: int = 0) -> list[str]:
    """A Markdown table: per perturbation, the cases kept and the skips by reason (the
    figures in docs/datasets.md: ``python -m hy_eval.harness.datasets._perturb``)."""
    suite = load_suite(suite_name)
    lines = ["| perturbation | kept | skipped (reason: cases) |", "|---|---|---|"]
    for name in PERTURBATIONS:
        ps = perturb_suite(suite, list(suite.refs), name, seed)
        reasons = Counter(reason for _, reason in ps.skipped)
        why = "; ".join(f"{r}: {n}" for r, n in reasons.most_common()) or "-"
        lines.append(f"| {name} | {len(ps.refs)} | {len(ps.skipped)} ({why}) |")
    return lines


if __name__ == "__main__":
    echo("\n".join(perturbation_counts()))

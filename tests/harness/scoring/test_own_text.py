"""A perfect answer always matches its own gold fact (E3, A1-A8).

The property: for every gold fact of every committed suite, in the case as written and
under every perturbation (``_perturb.PERTURBATIONS``, seed 0, as a run draws them), the
fact's own text, and that text cut at the answer limit (``MAX_FACT_CHARS``, as the
pipeline cuts it with ``…``) where the keywords survive the cut, is accepted by the
``strict`` matcher and read with the fact's subject (``subject_of``, A5). A renamed
speaker can make a fact longer than the limit ("Bea" -> "Dr. Ada Brooks"); such a fact is
what a perfect model's answer becomes once the pipeline cuts it.

Seed 0 draws one name per speaker; other seeds draw others. So every name form the
perturbations can draw (the bank's names and their other forms, titles with periods,
Latin names inside Chinese text), and the forms the issue lists besides (initials,
hyphens, apostrophes, Chinese names with 老/小/阿), is put in turn on each speaker of a
representative set of cases (``REPRESENTATIVE``: cases whose gold facts name a speaker),
through ``rename`` itself with its draw fixed.

``strict`` costs milliseconds a pair, so each distinct (text, keywords, names, subject)
is decided once (``_verdict``'s cache): the perturbations that do not rename leave most
texts as they were. The LoCoMo import is checked on the importer's own test conversation
(``tests/harness/datasets/test_locomo.py``): no LoCoMo suite is committed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from unittest import mock

import pytest

from hy_eval.harness import load_suite
from hy_eval.harness.datasets import (
    DATASETS_DIR,
    Case,
    GoldFact,
    _perturb,
    import_locomo,
    members,
    subject_right,
)
from hy_eval.harness.datasets._perturb import NAME_BANK, PERTURBATIONS, Perturbed, rename
from hy_eval.harness.datasets._rename_text import replace_names
from hy_eval.harness.scoring._matching import speaker_words
from hy_eval.harness.scoring._strict import bounded_all, decide
from hy_eval.memory import subject_of
from hy_eval.memory._extract import MAX_FACT_CHARS, cut_text
from tests.harness.datasets import test_locomo as locomo

#: A gold fact's text rewritten as a perturbed case's side reads it.
Rewrite = Callable[[str, GoldFact], str]

SUITES = sorted(p.name for p in DATASETS_DIR.iterdir() if (p / "suite.toml").is_file())

#: Name forms the bank does not hold today but the issue names (a bank that grows
#: should keep passing): (name, its other form), by the case language they go into.
EXTRA_FORMS = {
    "en": (
        ("J. R. Okoro", "J.R. Okoro"),
        ("Anne-Marie Dubois", "Anne-Marie"),
        ("Siobhan O'Neill", "Ms. O'Neill"),
        ("St. John Rivers", "Mr. Rivers"),
        # Long enough to take a fact over the answer limit, where it is cut.
        ("Prof. Dr. Anne-Marie Okafor-Brooks O'Neill-Lindqvist", "Anne-Marie"),
        ("老王", "小王"),
    ),
    "zh": (
        ("老王", "王哥"),
        ("小李", "李子"),
        ("阿明", "明仔"),
        ("J. R. Okoro", "Okoro"),
        ("Anne-Marie", "安玛丽"),
        ("O'Neill", "奥尼尔"),
        ("Dr. Ada Brooks", "Ada"),
        ("Prof. Dr. Anne-Marie Okafor-Brooks O'Neill-Lindqvist", "安玛丽"),
    ),
}

#: How many cases of each language, among those whose gold facts name a speaker, every
#: name form is tried on.
REPRESENTATIVE = 8


def name_forms(lang: str) -> list[tuple[str, str, str]]:
    """Every (name, other form, kind) the rename perturbation can draw for a case in
    ``lang`` (``_perturb.KINDS``), and the extra forms above. The other form (an alias's
    new name: "Dr. Zhou" for 周医生, "Guo Zihan" for 郭子涵) is tried as the name too, so
    it stands in the gold texts whether or not the case has aliases."""
    pairs = []
    for kind in _perturb.KINDS[lang]:
        bank = NAME_BANK[kind]
        pairs += [(new, other, kind) for new, other in bank.get(lang, bank.get("any", ()))]
    pairs += [(new, other, "extra") for new, other in EXTRA_FORMS[lang]]
    return pairs + [(other, new, kind) for new, other, kind in pairs]


def problems(case: Case, rewrite: Rewrite | None = None) -> Iterator[str]:
    """Each gold fact of ``case`` whose own text (or its cut) is no perfect answer;
    ``rewrite`` writes a text as the case's side sees it (``swap_perspective``)."""
    names = tuple(sorted(set(speaker_words(case.speakers))))
    for i, fact in enumerate(case.expect.facts):
        own = rewrite(fact.text or "", fact) if rewrite else fact.text or ""
        for text in own_texts(own, fact, names):
            why = _check(case, fact, text, names)
            if why:
                yield f"{case.id} fact {i}: {text!r}: {why}"


def own_texts(text: str, fact: GoldFact, names: tuple[str, ...]) -> list[str]:
    """The fact's text, and its cut at the answer limit when it is longer and the cut
    keeps every keyword."""
    out = [text]
    if len(text) > MAX_FACT_CHARS:
        cut = cut_text(text, MAX_FACT_CHARS)
        if bounded_all(cut, fact.keywords, names):
            out.append(cut)
            CUTS_CHECKED["cut"] += 1
    return out


#: How many cut texts were checked (the cut must not go untested).
CUTS_CHECKED: Counter[str] = Counter()


_SEEN: dict[tuple[object, ...], str] = {}


def _check(case: Case, fact: GoldFact, text: str, names: tuple[str, ...]) -> str:
    key = (text, json.dumps(fact.keywords), names, fact.subject, case.speakers)
    if key not in _SEEN:
        d = decide(text, fact.keywords, text, names)
        why = "" if d.accepted else f"not matched ({d.why})"
        if not why:
            got = subject_of(text, case.speakers)
            if not subject_right(fact.subject, got):
                why = f"read as {got.key!r}, not {fact.subject!r}"
        _SEEN[key] = why
    return _SEEN[key]


@cache
def suite_cases(name: str) -> tuple[Case, ...]:
    """The cases of a suite that have gold facts (``history``'s cases have none)."""
    return tuple(c for c in load_suite(name).iter_cases() if isinstance(c, Case))


def variants(case: Case) -> Iterator[tuple[Case, Rewrite | None]]:
    """The case and each perturbation of it that applies (seed 0), each with how its
    gold texts read from its side (``swap_perspective`` turns the sides round)."""
    yield case, None
    for name, perturb in PERTURBATIONS.items():
        out = perturb(case, 0)
        if isinstance(out, Perturbed):
            yield out.case, REWRITES[name](case, out) if name in REWRITES else None


#: How a fact's text writes the user, by language.
USER_WORDS = {"en": ("the user", "The user"), "zh": ("用户",)}


def _swapped_sides(case: Case, out: Perturbed) -> Rewrite:
    """A gold text of ``case`` as the swapped case's perfect answer writes it: the old
    user by name, the new user (a named human before) as the user. The user word is
    rewritten only where it stands as that word: not inside a speaker's name (用户9527),
    nor inside a keyword of the fact (用户研究, user research, is what the fact says)."""
    old_user = case.speakers.user_name or ""
    new_user = out.subjects["user"]
    forms = {f: "\0" for f in case.speakers.forms_of(new_user)}
    people = _perturb._people(case)
    words = USER_WORDS[case.lang]

    def rewrite(text: str, fact: GoldFact) -> str:
        keep = [k for k in members(fact.keywords) if any(w in k for w in words)]
        text = replace_names(text, forms, people)
        text = replace_names(text, dict.fromkeys(words, old_user), people, keep)
        text = text.replace("\0", words[0])
        return text[:1].upper() + text[1:]

    return rewrite


def _user_as_the_user(case: Case, out: Perturbed) -> Rewrite:
    """``name_line`` takes the user's name field away: the name is only in the text, so
    a perfect answer writes the user as "The user" / "用户" (A1), as the suites' own
    texts do. (LoCoMo's imported texts name the user: "Ana adopted a greyhound".)"""
    del out
    user = case.speakers.user_name or ""
    forms = {f: "\0" for f in case.speakers.forms_of(user)} if user else {}
    people = _perturb._people(case)
    user_word = USER_WORDS[case.lang][0]

    def rewrite(text: str, fact: GoldFact) -> str:
        del fact
        text = replace_names(text, forms, people).replace("\0", user_word)
        return text[:1].upper() + text[1:]

    return rewrite


#: How a gold text reads from the side of a perturbed case, where it changes.
REWRITES: dict[str, Callable[[Case, Perturbed], Rewrite]] = {
    "swap_perspective": _swapped_sides,
    "name_line": _user_as_the_user,
}


def test_every_committed_suite_is_checked():
    assert "multi_speaker" in SUITES and "history" in SUITES


@pytest.mark.parametrize("suite_name", SUITES)
def test_every_gold_fact_matches_its_own_text_under_every_perturbation(suite_name):
    found = [
        p for case in suite_cases(suite_name) for v, rw in variants(case) for p in problems(v, rw)
    ]
    assert not found, f"{len(found)} gold facts are no perfect answer:\n" + "\n".join(found[:40])


def _case(lang: str, user: str, said: dict[str, str], facts: list[tuple[str, str, str]]) -> Case:
    """A case of ``user`` and the named speakers of ``said`` (name -> message), with the
    gold facts (subject, text, keyword)."""
    messages = [{"role": "user", "name": user, "content": said[user]}]
    messages += [
        {"role": "assistant", "name": n, "content": c} for n, c in said.items() if n != user
    ]
    gold = [{"subject": s, "owner": "user", "text": t, "keywords": [k]} for s, t, k in facts]
    return Case.model_validate(
        {
            "id": "t-own",
            "lang": lang,
            "rules": ["A2"],
            "messages": messages,
            "expect": {"facts": gold},
        }
    )


#: hard-en-b-021, hard-zh-a-021, -026, -046: a speaker's name holds another speaker's
#: name ("Idris Bello", "Cindy Chen") or the user word (用户9527), or a keyword holds the
#: user word (用户研究); each with how the swap with the speaker first named writes it.
SWAPPED = [
    (
        _case(
            "en",
            "Jovana",
            {
                "Jovana": "I picked this month's book.",
                "Idris": "I'm hosting in Walthamstow.",
                "Idris Bello": "I'm a translator.",
            },
            [
                ("user", "The user picked this month's book.", "picked"),
                ("Idris", "Idris is hosting in Walthamstow.", "Walthamstow"),
                ("Idris Bello", "Idris Bello is a translator.", "translator"),
            ],
        ),
        [
            "Jovana picked this month's book.",
            "The user is hosting in Walthamstow.",
            "Idris Bello is a translator.",
        ],
    ),
    (
        _case(
            "zh",
            "贝嘉",
            {
                "贝嘉": "我是这次offsite的组织者。",
                "阿蛮": "我下个月去做用户研究。",
                "用户9527": "我的论文写人口流动。",
                "Cindy Chen": "我在银行做风控。",
            },
            [
                ("user", "用户是这次offsite的组织者。", "offsite"),
                ("阿蛮", "阿蛮下个月去做用户研究。", "用户研究"),
                ("用户9527", "用户9527的论文写人口流动。", "人口流动"),
                ("Cindy Chen", "Cindy Chen在银行做风控。", "风控"),
            ],
        ),
        [
            "贝嘉是这次offsite的组织者。",
            "用户下个月去做用户研究。",
            "用户9527的论文写人口流动。",
            "Cindy Chen在银行做风控。",
        ],
    ),
]


@pytest.mark.parametrize(("case", "expected"), SWAPPED, ids=["en", "zh"])
def test_the_swapped_sides_rewrite_only_the_speaker_and_the_user_word(case, expected):
    swapped = Perturbed(case, {"user": case.named_speakers[0]})
    rewrite = _swapped_sides(case, swapped)
    assert [rewrite(f.text or "", f) for f in case.expect.facts] == expected
    found = [p for v, rw in variants(case) for p in problems(v, rw)]
    assert not found, "\n".join(found)


def _named_in_facts(case: Case) -> list[str]:
    """The people of ``case`` whose name stands inside one of its gold facts' texts,
    not at its start: there a name's full stop ("Dr.") or other marks can cut the
    sentence in two, or a name's words be read as the fact's."""
    people = _perturb._people(case)
    texts = [f.text or "" for f in case.expect.facts]
    return [
        p
        for p in people
        if any(t.find(form) > 0 for t in texts for form in case.speakers.forms_of(p))
    ]


def _longest_named(case: Case) -> int:
    """The length of the longest gold text of ``case`` that names a speaker inside it."""
    forms = [f for p in _perturb._people(case) for f in case.speakers.forms_of(p)]
    texts = [f.text or "" for f in case.expect.facts]
    return max((len(t) for t in texts if any(t.find(f) > 0 for f in forms)), default=0)


def representative(lang: str) -> list[Case]:
    """Of each committed suite, the first ``REPRESENTATIVE`` cases of ``lang`` with a
    speaker named inside a gold fact (the cases a rename changes most), and the
    ``REPRESENTATIVE`` such cases with the longest of those facts (where a long name
    takes a fact over the answer limit, and the cut is checked)."""
    out: list[Case] = []
    for name in SUITES:
        found = [c for c in suite_cases(name) if c.lang == lang and _named_in_facts(c)]
        longest = sorted(found, key=lambda c: -_longest_named(c))
        out += [c for c in longest[:REPRESENTATIVE] if c not in found[:REPRESENTATIVE]]
        out += found[:REPRESENTATIVE]
    return out


def renamed(case: Case, person: str, form: tuple[str, str, str]) -> Case | None:
    """``case`` with ``person`` renamed to ``form`` by ``rename`` itself (its draw fixed),
    or None where the draw could not give it (the name is already in the case)."""
    new, other, _ = form
    text = _perturb._all_text(case)
    if _perturb._occurs(new, text) or _perturb._occurs(other, text):
        return None
    with mock.patch.object(_perturb, "_draw_names", return_value={person: form}):
        out = rename(case, 0)
    return out.case if isinstance(out, Perturbed) else None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_name_form_keeps_a_perfect_answer_perfect(lang):
    cases = representative(lang)
    assert len(cases) >= REPRESENTATIVE
    before = CUTS_CHECKED["cut"]
    found = []
    for case in cases:
        for person in _named_in_facts(case):
            for form in name_forms(lang):
                new = renamed(case, person, form)
                if new is not None:
                    found += [f"{form[0]} for {person}: {p}" for p in problems(new)]
    assert not found, f"{len(found)} facts:\n" + "\n".join(found[:40])
    if lang == "en":  # the Chinese facts stay under the limit even with the longest name
        assert CUTS_CHECKED["cut"] > before, "no fact went over the answer limit"


def _long_observations() -> dict[str, object]:
    """A conversation of two speakers whose names carry a full stop and an apostrophe,
    with observations over the answer limit (the importer shortens them at a clause)."""
    a, b = "Dr. Ada Brooks", "Siobhan O'Neill"
    long_a = (
        f"{a} is training for the Dublin marathon in October, running five mornings a "
        "week along the canal, and she wants to finish in under four hours this year."
    )
    long_b = (
        f"{b} will have lunch with {a} on Fridays at the cafe near the hospital, and they "
        "plan to keep doing it until the end of the year, she said."
    )
    return {
        "speaker_a": a,
        "speaker_b": b,
        "session_1_date_time": "1:00 pm on 2 May, 2023",
        "session_1": [
            locomo.turn(a, 1, 1, "I run five mornings a week for the Dublin marathon."),
            locomo.turn(b, 1, 2, "Let's keep our Friday lunches at the cafe, Ada!"),
        ],
        "session_1_observation": {a: [[long_a, "D1:1"]], b: [[long_b, "D1:2"]]},
        "qa": [],
    }


def test_locomo_imported_facts_match_their_own_text(tmp_path):
    """The importer's facts (its own test conversations, and one with titled names and
    observations over the limit), as imported and under every perturbation."""
    folder = tmp_path / "convs"
    folder.mkdir()
    for key, conv in {
        "26": locomo.conversation(),
        "30": locomo.second(),
        "31": _long_observations(),
    }.items():
        (folder / f"{key}.json").write_text(json.dumps(conv))
    import_locomo(folder, tmp_path / "suite")
    cases = [c for c in load_suite(str(tmp_path / "suite")).iter_cases() if isinstance(c, Case)]
    assert len(cases) >= 8 and any(c.id.startswith("locomo-31") for c in cases)
    found = [p for case in cases for v, rw in variants(case) for p in problems(v, rw)]
    assert not found, f"{len(found)} facts:\n" + "\n".join(found[:40])

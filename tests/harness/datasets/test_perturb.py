"""Metamorphic perturbations (E1, E3, M1-M6, D5, A1-A8, P2, P3): each is pure and
seeded, and keeps the gold consistent with the conversation: the natural-sentence oracle
of the self-check (tests/harness/oracle.py) scores exactly 1.0 / 0.0 on every perturbed suite."""

import json
import re

import pytest

from hy_eval.conversation import normalise_messages, render_conversation
from hy_eval.harness import Case, load_suite
from hy_eval.harness.datasets import (
    NAME_BANK,
    PERTURBATIONS,
    Skip,
    parse_perturbations,
    perturb,
    perturb_suite,
)
from hy_eval.harness.datasets._rename_text import replace_names
from hy_eval.harness.scoring import ACCURACY_METRICS, METRICS
from hy_eval.memory import Subject, subject_of
from tests.harness.oracle import score_oracle

CASES = load_suite("multi_speaker").cases

# One case of known content for the tests that follow a rename or a swap by name (the
# shipped cases change with the dataset).
TIM_JOHN = Case.model_validate(
    {
        "id": "t-tim-john",
        "lang": "en",
        "rules": ["A2", "P2", "P3"],
        "messages": [
            {"role": "user", "name": "Tim", "content": "I just joined Stripe as a designer."},
            {"role": "assistant", "name": "John", "content": "Nice! I still drive a tram."},
        ],
        "expect": {
            "facts": [
                {"subject": "user", "owner": "user", "keywords": ["Stripe"]},
                {"subject": "John", "owner": "user", "keywords": ["tram"]},
            ],
            "absent": [{"subject": "user", "keywords": ["tram"]}],
            "profile": {"name": "Tim", "absent": ["tram"]},
        },
    }
)


def _kept(name, seed):
    out = [perturb(c, name, seed) for c in CASES]
    return [o for o in out if not isinstance(o, Skip)], [o for o in out if isinstance(o, Skip)]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_oracle_scores_exactly_one_and_zero_on_every_perturbed_suite(name, seed):
    kept, _ = _kept(name, seed)
    assert kept, name
    totals, failures = score_oracle([p.case for p in kept])
    assert failures == []
    for metric in METRICS:
        num, den = totals[metric]
        if den:
            assert num / den == (1.0 if metric in ACCURACY_METRICS else 0.0), (metric, num, den)
    assert totals["attribution_accuracy"][1] > 0


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_pure_and_seeded(name):
    for case in CASES[::7]:
        before = case.model_dump_json()
        a, b = perturb(case, name, 3), perturb(case, name, 3)
        assert case.model_dump_json() == before  # the input is left as it was
        assert type(a) is type(b)
        if not isinstance(a, Skip):
            assert a.case.model_dump_json() == b.case.model_dump_json()
            assert a.case.id == case.id
            assert a.case.messages != case.messages  # a real change


def test_kept_and_skipped_cases_per_perturbation():
    # Where a case cannot be perturbed soundly it is skipped with a reason, never dropped
    # silently: kept + skipped is the suite.
    counts = {n: tuple(map(len, _kept(n, 0))) for n in PERTURBATIONS}
    assert all(k + s == len(CASES) for k, s in counts.values())
    # Only cases written in Anthropic form already are skipped by ``anthropic``.
    _, skipped = _kept("anthropic", 0)
    assert {s.reason for s in skipped} <= {"already in Anthropic form"}
    assert counts["anthropic"][0] >= len(CASES) - 40
    assert counts["swap_perspective"][1] > 0 and counts["order"][0] >= 5


def test_rename_draws_every_kind_of_name():
    kept, _ = _kept("rename", 0)
    kinds = {k for p in kept for k in re.findall(r"\((\w+)\)", p.note)}
    assert kinds == {"cjk", "latin", "common_word", "titled", "homonym"}
    # Latin names inside Chinese text, and a common-word name that is also a word here.
    zh_latin = [p for p in kept if p.case.lang == "zh" and "(latin)" in p.note]
    assert zh_latin
    homonym = next(p for p in kept if "(homonym)" in p.note)
    new = re.search(r"-> (\S+) \(homonym\)", homonym.note).group(1)
    assert new in {n for n, _ in NAME_BANK["common_word"][homonym.case.lang]}


def test_rename_maps_gold_and_text_consistently():
    p = perturb(TIM_JOHN, "rename", 0)
    new_user = next(n for n, old in p.subjects.items() if old == "Tim")
    new_john = next(n for n, old in p.subjects.items() if old == "John")
    assert p.case.expect.profile.name == new_user
    assert [f.subject for f in p.case.expect.facts] == ["user", new_john]
    assert "John" not in p.case.model_dump_json() and "Tim" not in p.case.model_dump_json()


def test_swap_perspective_remaps_subjects_and_profile():
    p = perturb(TIM_JOHN, "swap_perspective", 0)
    assert [(m["role"], m["name"]) for m in p.case.messages] == [
        ("assistant", "Tim"),
        ("user", "John"),
    ]
    assert [f.subject for f in p.case.expect.facts] == ["Tim", "user"]
    assert p.case.expect.profile.name == "John"
    assert p.case.expect.profile.absent == ["Stripe"]  # Tim's job must not enter John's L0
    assert {a.subject for a in p.case.expect.absent} == {"Tim"}
    assert p.subjects == {"user": "John", "Tim": "user"}


def test_swap_perspective_skips_what_it_cannot_swap():
    nameless = next(c for c in CASES if not c.speakers.user_name)
    assert isinstance(perturb(nameless, "swap_perspective", 0), Skip)
    with_memories = next(c for c in CASES if c.existing and c.named_speakers)
    assert isinstance(perturb(with_memories, "swap_perspective", 0), Skip)


def _render(case):
    return render_conversation(normalise_messages(case.messages, system=case.system))


def test_anthropic_form_renders_the_same_conversation():
    for case in CASES:
        p = perturb(case, "anthropic", 0)
        if isinstance(p, Skip):
            assert p.reason == "already in Anthropic form", case.id
            continue
        assert all(isinstance(m["content"], list) for m in p.case.messages)
        assert _render(p.case) == _render(case), case.id


def test_name_line_moves_the_name_into_the_text():
    p = perturb(TIM_JOHN, "name_line", 0)
    assert "name" not in p.case.messages[0]
    assert p.case.messages[0]["content"].startswith("My name is Tim. ")
    assert not _render(p.case).startswith("The user's name is")
    assert _render(TIM_JOHN).startswith("The user's name is Tim")
    assert p.case.expect == TIM_JOHN.expect


def _case(messages, facts):
    return Case.model_validate(
        {"id": "t", "lang": "en", "rules": ["A2"], "messages": messages, "expect": {"facts": facts}}
    )


def test_order_moves_only_self_contained_runs():
    msgs = [
        {"role": "user", "content": "Tell me about you two.", "name": "Tim"},
        {"role": "assistant", "name": "John", "content": "I am a nurse."},
        {"role": "assistant", "name": "Mary", "content": "I fly planes."},
    ]
    facts = [
        {"subject": "John", "owner": "user", "keywords": ["nurse"]},
        {"subject": "Mary", "owner": "user", "keywords": ["planes"]},
    ]
    p = perturb(_case(msgs, facts), "order", 0)
    assert [m["name"] for m in p.case.messages[1:]] == ["Mary", "John"]
    # "Me too" says nothing without John's message before it: that run stays.
    msgs[2] = {"role": "assistant", "name": "Mary", "content": "Me too."}
    facts[1] = {"subject": "Mary", "owner": "user", "keywords": ["nurse"]}
    assert isinstance(perturb(_case(msgs, facts), "order", 0), Skip)


def test_perturb_suite_keeps_line_refs_and_lists_skips():
    suite = load_suite("multi_speaker")
    ps = perturb_suite(suite, list(suite.refs), "swap_perspective", 0)
    assert len(ps.refs) + len(ps.skipped) == len(suite.refs)
    ref, text = next(iter(ps.iter_lines()))
    assert ps.parse_case(ref, text) == ps.results[ref.id].case


def test_parse_perturbations():
    assert parse_perturbations("rename, order,rename") == ["rename", "order"]
    with pytest.raises(ValueError, match="unknown perturbation shuffle"):
        parse_perturbations("rename,shuffle")


# --- rename: where a name stands (E1, A8, M1, M2) ---------------------------------------


def _two_speakers(lang, user, other, user_text, other_text, aliases=None):
    return Case.model_validate(
        {
            "id": "t-rename",
            "lang": lang,
            "rules": ["A2"],
            "messages": [
                {"role": "user", "name": user, "content": user_text},
                {"role": "assistant", "name": other, "content": other_text},
            ],
            "aliases": aliases or {},
            "expect": {"facts": [{"subject": other, "owner": "user", "keywords": ["x"]}]},
        }
    )


def _new_name(p, old):
    return next(n for n, o in p.subjects.items() if o == old)


def test_rename_replaces_a_name_only_as_a_whole_word_with_unicode_bounds():
    case = _two_speakers(
        "en",
        "Ana",
        "Jo",
        "Anaïs came with Ana's sister. Ana是我的名字. x",
        "Jo2 is my tag; Jo-Ann is Jo's cousin, Jo\u0308 is not. (Jo) x",
    )
    for seed in range(4):
        p = perturb(case, "rename", seed)
        ana, jo = _new_name(p, "Ana"), _new_name(p, "Jo")
        assert p.case.messages[0]["content"] == (
            f"Anaïs came with {ana}'s sister. {ana}是我的名字. x"
        )
        assert p.case.messages[1]["content"] == (
            f"Jo2 is my tag; Jo-Ann is {jo}'s cousin, Jo\u0308 is not. ({jo}) x"
        )


def test_rename_tells_a_common_word_name_from_the_word():
    # May the speaker is renamed; "May I", "I may", "in May" and "May 5th" are words, and
    # a sentence that starts with the name and its verb keeps the name ("May is busy").
    case = _two_speakers(
        "en",
        "Tim",
        "May",
        "May, are you coming? May I bring cake? I may be late. x",
        "May I ask who? I moved here in May. May is busy on May 5th. x",
    )
    for seed in range(4):
        p = perturb(case, "rename", seed)
        may = _new_name(p, "May")
        assert p.case.messages[0]["content"] == (
            f"{may}, are you coming? May I bring cake? I may be late. x"
        )
        assert p.case.messages[1]["content"] == (
            f"May I ask who? I moved here in May. {may} is busy on May 5th. x"
        )


def test_rename_keeps_a_given_name_inside_chinese_words():
    # 明, a form of 李明 given by the dataset, is a word only where it stands alone: 明天
    # (tomorrow) and 明白 (understand) keep their 明.
    case = _two_speakers(
        "zh",
        "李明",
        "王芳",
        "我是李明，明天去北京。",
        "明，你明白了吗？x",
        aliases={"李明": ["明"]},
    )
    for seed in range(4):
        p = perturb(case, "rename", seed)
        li = _new_name(p, "李明")
        other_form = p.case.aliases[li][0]
        assert p.case.messages[0]["content"] == f"我是{li}，明天去北京。"
        assert p.case.messages[1]["content"] == f"{other_form}，你明白了吗？x"


def _whole_words(text):
    return set(re.findall(r"[^\W\d_]+", text))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_rename_never_draws_a_name_already_in_the_case(seed):
    # ms-en-0021: the user Grace was "renamed" to Grace, a case paired with itself. A new
    # name is none of the case's names or aliases, and a common-word name drawn because the
    # word occurs ("may") never stands capitalised in the text ("in May").
    for case in CASES:
        p = perturb(case, "rename", seed)
        if isinstance(p, Skip):
            continue
        old = {
            f.casefold()
            for who in p.subjects.values()
            if who != "user"
            for f in case.speakers.forms_of(who)
        }
        words = _whole_words(json.dumps(case.model_dump(mode="json"), ensure_ascii=False))
        for new, who in p.subjects.items():
            if who == "user":
                continue
            assert new.casefold() not in old, (case.id, seed, p.note)
            if f"{new} (homonym)" in p.note and new.isascii():
                assert new not in words and new.lower() in words, (case.id, p.note)


def test_rename_keeps_a_one_character_name_inside_chinese_words():
    case = _two_speakers("zh", "明", "王芳", "我叫明，明天见。", "明，你明白了吗？x")
    for seed in range(4):
        p = perturb(case, "rename", seed)
        ming = _new_name(p, "明")
        assert p.case.messages[0]["content"] == f"我叫{ming}，明天见。"
        assert p.case.messages[1]["content"] == f"{ming}，你明白了吗？x"


def test_a_name_inside_another_speakers_full_name_is_not_replaced():
    # hard-en-b-021, hard-zh-a-021: "Idris" (one speaker) inside "Idris Bello" (another)
    # was replaced piecewise when only Idris's forms were mapped ("The user Bello").
    people = ("Jovana", "Idris", "Idris Bello")
    text = "Idris Bello is a translator; Idris hosts, at Idris's place."
    assert replace_names(text, {"Idris": "\0"}, people) == (
        "Idris Bello is a translator; \0 hosts, at \0's place."
    )
    text = "Cindy Chen在银行做风控，Cindy在上海。"
    assert replace_names(text, {"Cindy": "X"}, ("苗嘉树", "Cindy", "Cindy Chen")) == (
        "Cindy Chen在银行做风控，X在上海。"
    )
    # A name's other forms block too (a title spelt another way), and the longer name
    # still wins where it is replaced as well.
    text = "Doctor Idris Bello met Idris."
    assert replace_names(text, {"Idris": "A"}, ("Dr. Idris Bello", "Idris")) == (
        "Doctor Idris Bello met A."
    )
    mapping = {"Idris": "A", "Idris Bello": "B"}
    assert replace_names("Idris Bello met Idris.", mapping, people) == "B met A."


def test_the_subject_word_inside_a_name_or_a_kept_word_is_not_replaced():
    # hard-zh-a-026: 用户 inside the speaker 用户9527; hard-zh-a-046: 用户 inside 用户研究.
    people = ("房子昂", "用户9527")
    text = "用户9527写论文，用户考雅思。"
    assert replace_names(text, {"用户": "房子昂"}, people) == "用户9527写论文，房子昂考雅思。"
    text = "用户要去做用户研究。"
    assert replace_names(text, {"用户": "贝嘉"}, ("贝嘉",), keep=["用户研究"]) == (
        "贝嘉要去做用户研究。"
    )
    assert replace_names(text, {"用户": "贝嘉"}, ("贝嘉",)) == "贝嘉要去做贝嘉研究。"


@pytest.mark.parametrize(
    ("lang", "other", "said", "fact", "gone"),
    [
        # hard-zh-a-037: 冯 is Professor 冯 without the title; 冯教授 and 冯老师 name him.
        ("zh", "Professor 冯", "好的冯老师，我下周交。", "冯教授下学期要去UCLA访学半年。", "冯"),
        ("en", "Dr. Ada Nwosu", "Thanks, Doctor Ada Nwosu.", "Ada Nwosu moves to Leeds.", "Nwosu"),
    ],
)
def test_rename_replaces_every_form_the_subject_reader_knows(lang, other, said, fact, gone):
    # A form the subject reader knows a speaker by (another spelling of the title, the
    # name without it) is renamed with the name: left as it was, the fact reads as
    # someone else ("other:冯教授").
    case = Case.model_validate(
        {
            "id": "t-rename-forms",
            "lang": lang,
            "rules": ["A2"],
            "messages": [
                {"role": "user", "name": "Tim", "content": said},
                {"role": "assistant", "name": other, "content": f"{fact} x"},
            ],
            "expect": {
                "facts": [{"subject": other, "owner": "user", "text": fact, "keywords": ["x"]}]
            },
        }
    )
    for seed in range(4):
        p = perturb(case, "rename", seed)
        new = _new_name(p, other)
        text = p.case.expect.facts[0].text
        assert subject_of(text, p.case.speakers) == Subject("named", new), (p.note, text)
        assert gone not in p.case.model_dump_json(), p.note

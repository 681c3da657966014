"""Dataset validation (E1): every problem as file:line: field: message, exit code 2."""

import json
from pathlib import Path

import pytest

from hy_eval.cli import main
from hy_eval.harness import DatasetError, filter_cases, load_suite

GOOD = {
    "id": "x-1",
    "lang": "en",
    "rules": ["A2"],
    "tags": ["t"],
    "messages": [
        {"role": "user", "name": "Tim", "content": "hi"},
        {"role": "assistant", "name": "John", "content": "I am a nurse."},
    ],
    "expect": {"facts": [{"subject": "John", "owner": "user", "keywords": ["nurse"]}]},
}


def variant(**changes):
    case = json.loads(json.dumps(GOOD))
    for path, value in changes.items():
        target = case
        keys = path.split("__")
        for k in keys[:-1]:
            target = target[k]
        if value is KeyError:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
    return json.dumps(case, ensure_ascii=False)


BAD_LINES = [
    ("{not json", "json: invalid JSON"),
    ("[1, 2]", "case: a case must be a JSON object"),
    ('"a string"', "case: a case must be a JSON object"),
    (variant(id=KeyError), "id: Field required"),
    (variant(lang=KeyError), "lang: Field required"),
    (variant(expect=KeyError), "expect: Field required"),
    (variant(messages=KeyError), "messages: Field required"),
    (variant(surprise=1), "surprise: Extra inputs are not permitted"),
    (variant(expect__bogus=1), "expect.bogus: Extra inputs are not permitted"),
    (variant(lang="fr"), "lang: Input should be 'en' or 'zh'"),
    (variant(rules=["Z9"]), "rules: unknown rule id(s) Z9"),
    (variant(rules=[]), "rules: List should have at least 1 item"),
    (variant(rules="A2"), "rules: Input should be a valid list"),
    (variant(tags="t"), "tags: Input should be a valid list"),
    (variant(id="has space"), "id: id must be letters"),
    (variant(id=5), "id: Input should be a valid string"),
    (variant(messages=[]), "messages: List should have at least 1 item"),
    (
        variant(messages=[{"role": "boss", "content": "x"}]),
        "messages: message 0: unknown role 'boss'",
    ),
    (variant(messages=[{"role": "user", "content": 5}]), "messages: message 0: content must be"),
    (
        variant(messages=[{"role": "user", "name": 3, "content": "x"}]),
        "messages: message 0: name must be a string",
    ),
    (variant(history=[{"role": "x", "content": "y"}]), "history: message 0: unknown role"),
    (
        variant(expect__facts=[{"subject": "John", "owner": "user", "keywords": []}]),
        "expect.facts.0.keywords: List should have at least 1 item",
    ),
    (
        variant(expect__facts=[{"subject": "John", "owner": "user"}]),
        "expect.facts.0.keywords: Field required",
    ),
    (
        variant(expect__facts=[{"subject": "John", "owner": "user", "keywords": [" "]}]),
        "expect.facts.0.keywords.0: keywords must not be blank",
    ),
    (
        variant(expect__facts=[{"subject": "Mary", "owner": "user", "keywords": ["x"]}]),
        "expect.facts.0.subject: unknown subject 'Mary'",
    ),
    (
        variant(expect__facts=[{"subject": "John", "owner": "robot", "keywords": ["x"]}]),
        "expect.facts.0.owner: Input should be 'user' or 'agent'",
    ),
    (
        variant(expect__absent=[{"subject": "Zed", "keywords": ["x"]}]),
        "expect.absent.0.subject: unknown subject 'Zed'",
    ),
    (variant(expect__untouched=["m9"]), "expect.untouched: unknown memory id(s) m9"),
    (
        variant(expect__facts=[{"subject": "John", "owner": "user", "keywords": ["x"]}] * 9),
        "expect.facts: 9 gold facts, but an extraction answer holds at most 8",
    ),
    (
        variant(existing=[{"id": "m1", "text": "a"}, {"id": "m1", "text": "b"}]),
        "existing: duplicate memory ids",
    ),
    (
        variant(existing=[{"id": "m1", "text": ""}]),
        "existing.0.text: String should have at least 1 character",
    ),
    (
        variant(expect__profile={"name": "Bob"}),
        "expect.profile.name: 'Bob' is not the user's name 'Tim'",
    ),
    (
        variant(expect__profile={"absent": "x"}),
        "expect.profile.absent: Input should be a valid list",
    ),
    ("{" + '"id": "' + "x" * 200_001 + '"}', "line: longer than 200000 bytes"),
    # The v2 forms: groups, whole-word keywords, without, operations.
    (
        variant(expect__facts=[{"subject": "John", "owner": "user", "keywords": ["a", []]}]),
        "expect.facts.0.keywords.1: an any-of group must not be empty",
    ),
    (
        variant(expect__facts=[{"subject": "John", "owner": "user", "keywords": [["a", " "]]}]),
        "expect.facts.0.keywords.0: keywords must not be blank",
    ),
    (
        variant(expect__facts=[{"subject": "John", "owner": "user", "keywords": ["="]}]),
        "expect.facts.0.keywords.0: '=' must be followed by a word",
    ),
    (
        variant(expect__facts=[{"subject": "John", "owner": "user", "keywords": [[["a"]]]}]),
        "expect.facts.0.keywords.0: a keyword must be a string or a list of strings",
    ),
    (
        variant(expect__absent=[{"subject": "user", "keywords": ["a"], "without": [[]]}]),
        "expect.absent.0.without.0: an any-of group must not be empty",
    ),
    (
        variant(expect__absent=[{"subject": "user", "keywords": ["a"], "without": "Theo"}]),
        "expect.absent.0.without: Input should be a valid list",
    ),
    (
        variant(existing=[{"id": "m1", "text": "a"}], expect__operations={"m2": "UPDATE"}),
        "expect.operations: unknown memory id(s) m2",
    ),
    (
        variant(
            existing=[{"id": "m1", "text": "a"}],
            expect__operations={"m1": "NONE"},
            expect__untouched=["m1"],
        ),
        "expect.operations: m1 also in expect.untouched",
    ),
    (
        variant(existing=[{"id": "m1", "text": "a"}], expect__operations={"m1": "ADD"}),
        "expect.operations.m1: 'ADD' is not one of UPDATE, DELETE, SUPERSEDE, NONE",
    ),
    (
        variant(existing=[{"id": "m1", "text": "a"}], expect__operations={"m1": []}),
        "expect.operations.m1: give an operation or a non-empty list of them",
    ),
    (
        variant(
            existing=[{"id": "m1", "text": "a"}],
            expect__facts=[],
            expect__operations={"m1": "DELETE"},
        ),
        "expect.operations: m1 must change but the case has no gold fact",
    ),
    (variant(expect__measures_merge="no"), "expect.measures_merge: Input should be a valid bool"),
]


@pytest.mark.parametrize("line, message", BAD_LINES, ids=[m for _, m in BAD_LINES])
def test_malformed_lines(tmp_path, line, message):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "cases.jsonl").write_text(GOOD_LINE + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_suite(str(folder))
    [problem] = info.value.problems
    assert problem.startswith(f"{folder / 'cases.jsonl'}:2: "), problem
    assert message in problem, problem


GOOD_LINE = json.dumps(GOOD)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", ":1: file: empty file"),
        (b"\n\n  \n", ":1: file: empty file"),
        (
            b"\xef\xbb\xbf" + GOOD_LINE.encode() + b"\n",
            ":1: file: starts with a UTF-8 byte order mark",
        ),
        (GOOD_LINE.encode() + b"\r\n", ":1: file: Windows line endings"),
        (b"\xff\xfe bad", ":1: file: not UTF-8"),
        (
            GOOD_LINE.encode() + b"\n" + GOOD_LINE.encode() + b"\n",
            ":2: id: duplicate case id 'x-1'",
        ),
    ],
)
def test_malformed_files(tmp_path, content, message):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "cases.jsonl").write_bytes(content)
    with pytest.raises(DatasetError) as info:
        load_suite(str(folder))
    assert any(message in p for p in info.value.problems), info.value.problems


def test_validate_command_lists_every_problem_and_exits_2(tmp_path, capsys):
    f = tmp_path / "s.jsonl"
    f.write_text(GOOD_LINE + "\n{bad\n" + variant(id="x-2", lang="fr") + "\n")
    assert main(["datasets", "validate", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"{f}:2: json: invalid JSON (Expecting property name enclosed in double quotes at column 2)",
        f"{f}:3: lang: Input should be 'en' or 'zh'",
    ]


def test_shipped_suites_are_valid_and_meet_the_brief(capsys):
    assert main(["datasets", "validate"]) == 0
    suite = load_suite("multi_speaker")
    zh = sum(c.lang == "zh" for c in suite.cases)
    assert len(suite.cases) >= 150 and zh / len(suite.cases) >= 0.40
    rules = {r for c in suite.cases for r in c.rules}
    for rule in [f"A{i}" for i in range(1, 8)] + ["P1", "P2", "P3", "P4", "R1", "R2", "R3"]:
        assert rule in rules, rule
    tags = {t for c in suite.cases for t in c.tags}
    for tag in [
        "named_on_assistant_role",
        "ai_assistant_advice",
        "user_adopts_advice",
        "tool_result",
        "named_speaks_about_user",
        "user_quotes_other",
        "third_person_mentioned",
        "two_named",
        "three_named",
        "same_fact_two_subjects",
        "common_word_names",
        "cjk_names",
        "names_with_titles",
        "code_switching",
        "adversarial",
    ]:
        assert tag in tags, tag
    assert len(load_suite("history").cases) >= 40


def test_shipped_multi_speaker_suite_has_the_size_and_shape_it_was_built_to():
    """The v2 suite's targets: size, native Chinese, merges, per-rule checks, long conversations,
    M5 in Anthropic form, no user name on more than 5% of the cases."""
    from collections import Counter

    from hy_eval.harness.analysis import suite_stats

    suite = load_suite("multi_speaker")
    st = suite_stats(suite)
    n = len(suite.refs)
    assert n >= 300
    # zh.jsonl mirrors en.jsonl scenario by scenario; the other Chinese files are native.
    native_zh = sum(r.lang == "zh" and r.file.name != "zh.jsonl" for r in suite.refs)
    assert native_zh / n >= 0.40, native_zh
    assert st.merge_cases >= 80
    for rule in ("P2", "P4", "A6", "A7", "R3"):
        assert st.checked_rules[rule] >= 10, rule
    assert sum(m >= 6 for m in st.messages) >= n / 3
    anthropic = [
        c
        for c in suite.cases
        if any(
            isinstance(m.get("content"), list)
            and any(
                isinstance(p, dict) and p.get("type") in ("tool_use", "thinking")
                for p in m["content"]
            )
            for m in c.messages
        )
    ]
    assert len(anthropic) >= 3
    names = Counter(c.speakers.user_name for c in suite.cases if c.speakers.user_name)
    assert max(names.values()) <= 0.05 * n, names.most_common(3)
    assert st.duplicates == []
    # The MDE at the baseline's rates, attribution with every gold fact matched
    # (the suite's capacity; docs/datasets.md, "Suite statistics").
    power = {r["metric"]: r for r in st.power}
    assert power["attribution_accuracy"]["mde_all"] <= 0.05, power["attribution_accuracy"]
    assert power["merge_violation_rate_raw"]["mde"] <= 0.10, power["merge_violation_rate_raw"]


def test_filter():
    suite = load_suite("multi_speaker")
    zh_adv = filter_cases(suite.cases, "lang=zh,tag=adversarial")
    assert zh_adv and all(c.lang == "zh" and "adversarial" in c.tags for c in zh_adv)
    assert [c.id for c in filter_cases(suite.cases, "id=ms-en-0001")] == ["ms-en-0001"]
    with pytest.raises(ValueError, match="bad filter"):
        filter_cases(suite.cases, "colour=red")


def test_filter_reads_a_committed_sample(tmp_path):
    # id=@FILE: the committed capable-model sample, 48 cases a language.
    suite = load_suite("multi_speaker")
    sample = filter_cases(suite.cases, "id=@datasets/multi_speaker/samples/capable96.txt")
    assert len(sample) == 96 and sum(c.lang == "zh" for c in sample) == 48
    ids = tmp_path / "ids.txt"
    ids.write_text("# two cases\nms-en-0001\n\nms-en-0002  # a comment\n", encoding="utf-8")
    picked = filter_cases(suite.cases, f"id=@{ids},lang=en")
    assert [c.id for c in picked] == ["ms-en-0001", "ms-en-0002"]
    (tmp_path / "empty.txt").write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(ValueError, match="lists no case id"):
        filter_cases(suite.cases, f"id=@{tmp_path / 'empty.txt'}")
    with pytest.raises(ValueError, match="cannot read it"):
        filter_cases(suite.cases, f"id=@{tmp_path / 'missing.txt'}")


def test_history_suite_passes(capsys):
    assert main(["run", "--suite", "history"]) == 0
    assert "history: 40/40 cases pass" in capsys.readouterr().out


def _merge_case(existing, facts, untouched, **expect):
    # Every gold fact needs a text its own keywords find (the strict matcher): one is made up here.
    for fact in facts:
        words = [k if isinstance(k, str) else k[0] for k in fact["keywords"]]
        fact.setdefault("text", f"{fact['subject']} likes {' '.join(words)}.")
    case = json.loads(GOOD_LINE)
    case["existing"] = existing
    case["expect"] = {"facts": facts, "untouched": untouched, **expect}
    return case


MERGE_CASES = [
    # The classic: John drinks black coffee too; the user's memory must stay as it is.
    (
        _merge_case(
            [{"id": "m1", "text": "The user drinks black coffee every morning."}],
            [{"subject": "John", "owner": "user", "keywords": ["black coffee"]}],
            ["m1"],
        ),
        [],
    ),
    (
        _merge_case(
            [{"id": "m1", "text": "The user plays the violin."}],
            [{"subject": "John", "owner": "user", "keywords": ["nurse"]}],
            ["m1"],
        ),
        ["expect.untouched: m1 is not returned by the store search for any gold fact"],
    ),
    (
        _merge_case(
            [{"id": "m1", "text": "The user plays the violin."}],
            [{"subject": "John", "owner": "user", "keywords": ["nurse"]}],
            ["m1"],
            measures_merge=False,
        ),
        [],
    ),
    (
        _merge_case(
            [{"id": "m1", "text": "Mallory drinks black coffee every morning."}],
            [{"subject": "John", "owner": "user", "keywords": ["black coffee"]}],
            ["m1"],
        ),
        ["expect.untouched: m1 has subject other:mallory, not a speaker of the case"],
    ),
    (
        _merge_case(
            [{"id": "m1", "text": "The user drinks black coffee every morning."}],
            [
                {"subject": "John", "owner": "user", "keywords": ["black coffee"]},
                {"subject": "user", "owner": "user", "keywords": ["black coffee", "decaf"]},
            ],
            ["m1"],
        ),
        ["expect.untouched: m1 (user) is returned for gold fact(s) 1 of the same subject"],
    ),
]


@pytest.mark.parametrize("data, expected", MERGE_CASES)
def test_merge_check(data, expected):
    from hy_eval.harness import Case
    from hy_eval.harness.datasets import merge_problems

    got = merge_problems(Case.model_validate(data))
    assert len(got) == len(expected), got
    for line, start in zip(got, expected, strict=True):
        assert line.startswith(start), line


def test_validate_checks_merges_unless_told_not_to(tmp_path, capsys):
    f = tmp_path / "s.jsonl"
    f.write_text(
        json.dumps(MERGE_CASES[0][0]) + "\n" + json.dumps({**MERGE_CASES[1][0], "id": "x-2"}) + "\n"
    )
    assert main(["datasets", "validate", "--no-merges", str(f)]) == 0
    capsys.readouterr()
    assert main(["datasets", "validate", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{f}:2: expect.untouched: m1 is not returned")


def test_merge_check_finds_expected_operations_no_fact_can_reach():
    from hy_eval.harness import Case
    from hy_eval.harness.datasets import merge_problems

    data = _merge_case(
        [
            {"id": "m1", "text": "The user lives in Leeds."},
            {"id": "m2", "text": "The user plays the violin."},
        ],
        [
            {
                "subject": "user",
                "owner": "user",
                "keywords": ["York"],
                "text": "The user moved from Leeds to York.",
            }
        ],
        [],
        operations={"m1": "SUPERSEDE", "m2": "UPDATE"},
    )
    problems = merge_problems(Case.model_validate(data))
    assert problems == [
        "expect.operations: m2 (user) is not returned by the store search for any gold fact "
        "of its subject, so reconcile cannot change it"
    ]


def test_an_expected_operation_must_be_reached_by_the_gold_text():
    """The pipeline searches with each predicted fact's text, so a memory to
    change must be found by its gold fact's text; a keyword query that finds it (here
    "The user violin") does not make the case passable."""
    from hy_eval.harness import Case
    from hy_eval.harness.datasets import merge_problems

    data = _merge_case(
        [{"id": "m1", "text": "The user plays the violin."}],
        [
            {
                "subject": "user",
                "owner": "user",
                "keywords": ["violin"],
                "text": "The user gave up her lessons for good.",
            }
        ],
        [],
        operations={"m1": "SUPERSEDE"},
    )
    assert merge_problems(Case.model_validate(data)) == [
        "expect.operations: m1 (user) is not returned by the store search for any gold fact "
        "of its subject, so reconcile cannot change it"
    ]
    data["expect"]["facts"][0]["text"] = "The user stopped playing the violin."
    assert merge_problems(Case.model_validate(data)) == []


def test_no_case_copies_a_prompt_example():
    """A case that repeats a prompt's worked example measures recall of the prompt,
    not attribution. The share of a case's character 3-grams found in one prompt file's
    example lines stays under 0.6 (the old ms-en-0001, a copy of the default example, had
    0.85; ordinary short cases reach about 0.4 on common words)."""
    import re

    from hy_eval.harness.analysis._suitestats import _grams
    from hy_eval.harness.datasets import canonical

    examples = []
    for path in sorted((Path(__file__).parents[3] / "prompts").glob("*/*.j2")):
        lines = re.findall(r"^\[[^\]]+\]:\s*(.*)$", path.read_text(encoding="utf-8"), re.M)
        if lines:
            examples.append(_grams(canonical("\n".join(lines))))
    assert examples
    for case in load_suite("multi_speaker").cases:
        grams = _grams(canonical("\n".join(m.content for m in case.normalised)))
        share = max(len(grams & e) / len(grams) for e in examples)
        assert share < 0.6, (case.id, round(share, 3))


def test_spread_picks_a_fixed_subset_across_the_suite():
    from hy_eval.harness.datasets import spread

    assert spread(list(range(10)), 5) == [0, 2, 4, 6, 8]
    assert spread(list(range(3)), 5) == [0, 1, 2]
    assert spread(list(range(7)), 3) == [0, 2, 4]
    refs = load_suite("multi_speaker").refs
    picked = spread(list(refs), 60)
    assert len(picked) == len({r.id for r in picked}) == 60
    assert picked == spread(list(refs), 60)  # the same every time
    # every file of the suite is represented, in proportion to its size
    files = {r.file.name for r in refs}
    for name in files:
        share = sum(r.file.name == name for r in picked) / 60
        assert abs(share - sum(r.file.name == name for r in refs) / len(refs)) < 0.03, name

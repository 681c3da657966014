"""The people of the extraction prompt's worked examples, read from the prompt a run
renders (``example_people``; docs/metrics.md, ``echoed_subject_rate``): the name lines and
bracketed labels of the examples block (D2-D5, read back as H2-H4 read L1_RAW), for the
variant and the language used, and nobody for a prompt that shows no examples."""

import shutil
from pathlib import Path

import pytest

from hy_eval.memory import PromptError, PromptLibrary, example_people, mentions
from hy_eval.memory._examples import people_in_examples

ROOT = Path(__file__).resolve().parents[2] / "prompts"

DEFAULT = {
    "en": ("Tim", "John", "Mary", "Bill", "Ana"),
    "zh": ("Tim", "John", "王伟", "张敏", "李娜"),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_default_examples_name_their_speakers_and_users(lang):
    people = example_people(PromptLibrary("default"), lang)
    assert people == DEFAULT[lang]
    # Role labels are nobody: [user], [assistant], [tool].
    assert not {"user", "assistant", "tool", "system"} & set(people)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("variant", ["labels_off", "rules_off"])
def test_a_variant_that_keeps_the_examples_keeps_their_people(variant, lang):
    # labels_off changes only the user message; rules_off calls self.examples() from
    # its own system block.
    assert example_people(PromptLibrary(variant), lang) == DEFAULT[lang]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("variant", ["no_examples", "short"])
def test_a_prompt_without_examples_has_no_example_people(variant, lang):
    # no_examples empties the block; short inherits it but its system block never shows
    # it, so the text the model reads has no examples either.
    lib = PromptLibrary(variant)
    assert example_people(lib, lang) == ()
    if variant == "short":
        assert (
            "Mary"
            not in lib.render(
                "extract",
                "en",
                {
                    "conversation": "",
                    "history": "",
                    "user_name": None,
                    "named_speakers": [],
                    "lang": "en",
                },
            ).system
        )


def test_the_names_follow_the_template_not_a_list(tmp_path):
    root = tmp_path / "prompts"
    shutil.copytree(ROOT, root)
    (root / "other_people").mkdir()
    (root / "other_people" / "extract.zh.j2").write_text(
        '{% extends "default/extract.zh.j2" %}\n'
        "{% block examples %}\n# 示例\n用户名叫阿强\n[user]: 我养了一只猫。\n"
        "[刘洋]: 我在医院上班。\n"
        '{"facts": [{"text": "刘洋在医院上班。", "owner": "user"}], "basic_info": {}}\n'
        "{% endblock %}\n",
        encoding="utf-8",
    )
    lib = PromptLibrary("other_people", root=root)
    assert example_people(lib, "zh") == ("阿强", "刘洋")
    assert example_people(lib, "en") == DEFAULT["en"]  # the default's English file


def test_block_text_reads_a_named_block_through_the_chain():
    lib = PromptLibrary("rules_off")
    text = lib.block_text("extract", "zh", "examples")
    assert text is not None and "[王伟]: 我在学校教钢琴。" in text
    assert lib.block_text("extract", "zh", "no_such_block") is None
    assert PromptLibrary("no_examples").block_text("extract", "en", "examples") == ""
    with pytest.raises(PromptError):
        example_people(lib, "fr")


def test_people_in_examples_reads_labels_name_lines_and_answer_names():
    text = (
        "# Examples\nThe user's name is Eve\n[user]: hi\n[Dr. Ng]: hello\n"
        "[assistant]: [tool]: not a label mid-line\n"
        '{"facts": [], "basic_info": {"name": "Eve"}}\n\n'
        "[user]: I'm Kai.\n[tool]: ok\n"
        '{"facts": [], "basic_info": {"name": "Kai"}}'
    )
    assert people_in_examples(text) == ("Eve", "Dr. Ng", "Kai")
    assert people_in_examples("# Examples\nnone here") == ()


def test_mentions_finds_a_name_as_subjects_are_found():
    assert mentions("[王伟]: 你好", "王伟") and mentions("王伟先生说他很好", "王伟")
    assert mentions("The user's name is Tim", "Tim")
    assert not mentions("Timothy called", "Tim") and not mentions("Anne-Marie came", "Anne")

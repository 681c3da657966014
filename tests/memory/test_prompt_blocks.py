"""A variant changes one rule without copying the rules block: each
numbered rule of the extraction prompt is a block of its own (``rule_1`` ... ``rule_8``),
and the blocks add no text: the rendered prompts are the same as before they existed (the
committed cassette still replays)."""

import shutil
from pathlib import Path

import pytest

from hy_eval.memory import PromptLibrary
from hy_eval.memory._prompts import STAGE_VARIABLES

ROOT = Path(__file__).resolve().parents[2] / "prompts"
NEW_RULE = {
    "en": '3. Whatever the assistant proposes is a fact about the assistant, owner "agent".',
    "zh": '3. 助手提出的任何内容都是关于助手的事实，owner 为 "agent"。',
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_variant_overrides_one_rule(tmp_path, lang):
    root = tmp_path / "prompts"
    shutil.copytree(ROOT, root)
    (root / "one_rule").mkdir()
    (root / "one_rule" / f"extract.{lang}.j2").write_text(
        f'{{% extends "default/extract.{lang}.j2" %}}\n'
        f"{{% block rule_3 %}}{NEW_RULE[lang]}\n{{% endblock %}}\n",
        encoding="utf-8",
    )
    variables = {k: "X" for k in STAGE_VARIABLES["extract"]}
    base = PromptLibrary("default", root=root).render("extract", lang, variables).system
    variant = PromptLibrary("one_rule", root=root).render("extract", lang, variables).system
    old = [line for line in base.splitlines() if line.startswith("3. ")]
    assert len(old) == 1
    assert variant == base.replace(old[0], NEW_RULE[lang])  # that line alone changed


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_rule_is_a_block_and_adds_no_text(lang):
    text = (ROOT / "default" / f"extract.{lang}.j2").read_text("utf-8")
    for n in range(1, 9):
        assert f"{{% block rule_{n} %}}{n}. " in text, n
    variables = {k: "X" for k in STAGE_VARIABLES["extract"]}
    system = PromptLibrary("default").render("extract", lang, variables).system
    rules = [line for line in system.splitlines() if line[:1].isdigit() and line[1:3] == ". "]
    assert [line[0] for line in rules] == [str(n) for n in range(1, 9)]  # one line each
    assert "{%" not in system and "endblock" not in system

"""Prompt templates: every file renders in both languages, variables are checked, the
sandbox and StrictUndefined hold, variants fall back to default."""

import pytest

from hy_eval.memory import PromptError, PromptLibrary
from hy_eval.memory._prompts import LANGUAGES, STAGES

SAMPLE = {
    "extract": {
        "conversation": "The user's name is Tim\n[user]: I work at Stripe.\n[John]: I am a nurse.",
        "history": "[user]: earlier",
        "user_name": "Tim",
        "named_speakers": ["John"],
    },
    "reconcile": {
        "facts": [{"index": 0, "text": "John likes coffee.", "owner": "user"}],
        "memories": [{"id": "m1", "text": "The user likes coffee."}],
        "user_name": "Tim",
        "named_speakers": ["John"],
    },
}


@pytest.mark.parametrize("variant", PromptLibrary.variants())
@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_prompt_renders(variant, stage, lang):
    lib = PromptLibrary(variant)
    prompt = lib.render(stage, lang, {**SAMPLE[stage], "lang": lang})
    assert prompt.system and prompt.user
    assert "<<<hy_eval:user>>>" not in prompt.system + prompt.user
    if stage == "extract" and variant == "labels_off":
        # The regression on purpose: named humans speak as [assistant], no name line.
        assert "[John]" not in prompt.user and "[assistant]: I am a nurse." in prompt.user
        assert "[user]: I work at Stripe." in prompt.user
        if lang == "en":
            assert "The user's name is" not in prompt.user
    elif stage == "extract":
        assert SAMPLE["extract"]["conversation"] in prompt.user
        assert "[user]" in prompt.system and "owner" in prompt.system
    else:
        assert "m1: The user likes coffee." in prompt.user
        assert "0: John likes coffee." in prompt.user
    # The language of the instructions follows the conversation's.
    has_cjk = any("\u4e00" <= ch <= "\u9fff" for ch in prompt.system)
    assert has_cjk == (lang == "zh")


def test_labels_off_drops_the_name_line_of_each_language():
    lib = PromptLibrary("labels_off")
    for lang, line in (("en", "The user's name is Tim"), ("zh", "用户名叫Tim")):
        conversation = f"{line}\n[user]: 我在Stripe工作。\n[John]: 我是护士。"
        vars_ = {**SAMPLE["extract"], "conversation": conversation, "lang": lang}
        user = lib.render("extract", lang, vars_).user
        assert line not in user and "[John]" not in user
        assert "[assistant]: 我是护士。" in user


def test_variant_changes_only_what_it_overrides():
    default = PromptLibrary("default")
    bare = PromptLibrary("no_examples")
    vars_ = {**SAMPLE["extract"], "lang": "en"}
    a, b = default.render("extract", "en", vars_), bare.render("extract", "en", vars_)
    assert "# Examples" in a.system and "# Examples" not in b.system
    assert a.user == b.user
    assert bare.path_for("extract", "en") == "no_examples/extract.en.j2"


LAYOUT = "{% block system %}{% endblock %}\n<<<hy_eval:user>>>\n{% block user %}{% endblock %}"
USES_CONVERSATION = (
    '{% extends "_layout.j2" %}{% block system %}S{% endblock %}'
    "{% block user %}{{ conversation }}{% endblock %}"
)


def test_fallback_to_default(tmp_path):
    (tmp_path / "default").mkdir()
    (tmp_path / "v").mkdir()
    (tmp_path / "_layout.j2").write_text(
        "{% block system %}{% endblock %}\n<<<hy_eval:user>>>\n{% block user %}{% endblock %}"
    )
    (tmp_path / "default" / "extract.en.j2").write_text(USES_CONVERSATION)
    lib = PromptLibrary("v", root=tmp_path)
    assert lib.path_for("extract", "en") == "default/extract.en.j2"
    assert lib.render("extract", "en", {"conversation": "{{ 7*7 }}"}).user == "{{ 7*7 }}"
    with pytest.raises(PromptError, match=r"missing prompt file prompts/default/extract\.zh\.j2"):
        lib.render("extract", "zh", {})


def _lib_with(tmp_path, body):
    (tmp_path / "default").mkdir(exist_ok=True)
    (tmp_path / "_layout.j2").write_text(
        "{% block system %}{% endblock %}\n<<<hy_eval:user>>>\n{% block user %}{% endblock %}"
    )
    (tmp_path / "default" / "extract.en.j2").write_text(body)
    return PromptLibrary("default", root=tmp_path)


def test_template_using_a_variable_the_code_does_not_pass_fails(tmp_path):
    lib = _lib_with(
        tmp_path,
        '{% extends "_layout.j2" %}{% block system %}{% if speaker_roles %}x{% endif %}{% endblock %}',
    )
    with pytest.raises(PromptError, match="undefined variable\\(s\\) speaker_roles"):
        lib.render("extract", "en", {"conversation": "c"})


def test_template_syntax_error_names_file_and_line(tmp_path):
    lib = _lib_with(
        tmp_path, '{% extends "_layout.j2" %}\n{% block system %}\n{{ oops( }}\n{% endblock %}'
    )
    with pytest.raises(
        PromptError, match=r"prompts/default/extract.en.j2:3: template syntax error"
    ):
        lib.render("extract", "en", {"conversation": "c"})


def test_sandbox_blocks_unsafe_attribute_access(tmp_path):
    from jinja2.exceptions import SecurityError

    lib = _lib_with(
        tmp_path,
        '{% extends "_layout.j2" %}{% block system %}'
        "{{ conversation.__class__.__mro__ }}{% endblock %}",
    )
    with pytest.raises(SecurityError):
        lib.render("extract", "en", {"conversation": "c"})


def test_unknown_variant_and_passing_unknown_variables():
    with pytest.raises(PromptError, match="unknown prompt variant 'nope' \\(known: default"):
        PromptLibrary("nope")
    with pytest.raises(PromptError, match="unknown variable"):
        PromptLibrary().render("extract", "en", {"conversation": "c", "bogus": 1})


def test_shipped_variants_have_a_readme():
    from hy_eval.memory._prompts import DEFAULT_PROMPTS_DIR

    for variant in PromptLibrary.variants():
        text = (DEFAULT_PROMPTS_DIR / variant / "README.md").read_text()
        assert len(text.split()) > 30

"""One test per rule of SPEC sections 2, 3 and 7 (M1-M7, D1-D6, H1-H5), with the spec's
own examples as golden strings, byte for byte."""

import pytest

from hy_eval.conversation import (
    ChatMessage,
    MessageError,
    history_context,
    normalise_messages,
    parse_l1_raw,
    read_l1_raw,
    render_conversation,
)

SPEC_EN = "The user's name is Tim\n[user]: I work at Stripe.\n[John]: I am a nurse in Berlin."
SPEC_ZH = "用户名叫Tim\n[user]: 我在 Stripe 工作。\n[John]: 我是住在柏林的护士。"

TIM_JOHN_EN = [
    {"role": "user", "name": "Tim", "content": "I work at Stripe."},
    {"role": "assistant", "name": "John", "content": "I am a nurse in Berlin."},
]
TIM_JOHN_ZH = [
    {"role": "user", "name": "Tim", "content": "我在 Stripe 工作。"},
    {"role": "assistant", "name": "John", "content": "我是住在柏林的护士。"},
]


def test_M1_user_role_is_current_user_and_keeps_name():
    [m] = normalise_messages([{"role": "user", "name": "Tim", "content": "hi"}])
    assert (m.role, m.name, m.content) == ("user", "Tim", "hi")


def test_M2_named_assistant_is_a_named_human():
    m = normalise_messages(TIM_JOHN_EN)[1]
    assert m.role == "assistant" and m.name == "John"
    assert m.is_named_human and not m.is_ai_assistant


def test_M3_unnamed_assistant_is_the_ai():
    [m] = normalise_messages([{"role": "assistant", "content": "Noted."}])
    assert m.is_ai_assistant and not m.is_named_human


def test_M4_tool_name_is_the_tool_not_a_speaker():
    msgs = normalise_messages(
        [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Berlin"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "12°C"},
        ]
    )
    tool = msgs[2]
    assert (tool.role, tool.name, tool.tool_call_id) == ("tool", "get_weather", "c1")
    assert not tool.is_named_human
    # D4: a tool renders with its role as label, never with the tool name.
    assert render_conversation(msgs).splitlines()[-1] == "[tool]: 12°C"


def test_M5_openai_parts_and_anthropic_blocks_keep_names():
    openai_style = [
        {"role": "user", "name": "Tim", "content": [{"type": "text", "text": "I work at Stripe."}]},
        {"role": "assistant", "name": "John", "content": "I am a nurse in Berlin."},
    ]
    anthropic_style = [
        {"role": "user", "name": "Tim", "content": [{"type": "text", "text": "I work at Stripe."}]},
        {
            "role": "assistant",
            "name": "John",
            "content": [{"type": "text", "text": "I am a nurse in Berlin."}],
        },
    ]
    expected = [
        ChatMessage("user", "I work at Stripe.", "Tim"),
        ChatMessage("assistant", "I am a nurse in Berlin.", "John"),
    ]
    assert normalise_messages(openai_style, format="openai") == expected
    assert normalise_messages(anthropic_style, format="anthropic") == expected
    assert render_conversation(normalise_messages(anthropic_style)) == SPEC_EN


def test_M6_no_guessing_the_user_from_names():
    # John speaks on role=user: he is the current user, whatever names follow.
    msgs = normalise_messages(
        [
            {"role": "user", "name": "John", "content": "Hi."},
            {"role": "assistant", "name": "Tim", "content": "Hello John."},
        ]
    )
    assert msgs[0].role == "user" and msgs[0].name == "John"
    assert render_conversation(msgs).startswith("The user's name is John\n")


@pytest.mark.parametrize(
    "messages, index, fragment",
    [
        ([], None, "empty conversation"),
        ([{"role": "boss", "content": "x"}], 0, "unknown role"),
        ([{"role": "user", "content": 5}], 0, "content must be"),
        (
            [{"role": "user", "content": "a"}, {"role": "user", "name": 7, "content": "b"}],
            1,
            "name must be a string",
        ),
    ],
)
def test_M7_errors_name_index_and_problem(messages, index, fragment):
    with pytest.raises(MessageError) as info:
        normalise_messages(messages)
    assert info.value.index == index
    assert fragment in str(info.value)
    if index is not None:
        assert str(info.value).startswith(f"message {index}: ")


def test_D1_plain_conversation_renders_exactly():
    msgs = normalise_messages(
        [{"role": "user", "content": "I like coffee."}, {"role": "assistant", "content": "Noted."}]
    )
    assert render_conversation(msgs) == "[user]: I like coffee.\n[assistant]: Noted."


def test_D2_user_is_always_labelled_user_even_with_a_name():
    text = render_conversation(normalise_messages(TIM_JOHN_EN))
    assert "[user]: I work at Stripe." in text.splitlines()
    assert "[Tim]" not in text


def test_D3_named_assistant_gets_its_name_unnamed_gets_assistant():
    msgs = normalise_messages(
        [
            {"role": "assistant", "name": "John", "content": "a"},
            {"role": "assistant", "content": "b"},
        ]
    )
    assert render_conversation(msgs) == "[John]: a\n[assistant]: b"


def test_D4_system_and_tool_render_with_role_label():
    msgs = normalise_messages(
        [{"role": "user", "content": "hi"}, {"role": "tool", "name": "search", "content": "r"}],
        system="Be brief.",
    )
    assert render_conversation(msgs) == "[system]: Be brief.\n[user]: hi\n[tool]: r"


def test_D5_name_line_first_and_once_golden_english():
    msgs = normalise_messages(
        [*TIM_JOHN_EN, {"role": "user", "name": "Tim", "content": "And I cycle."}]
    )
    text = render_conversation(msgs)
    assert text == SPEC_EN + "\n[user]: And I cycle."
    assert text.count("The user's name is") == 1
    assert render_conversation(normalise_messages(TIM_JOHN_EN)) == SPEC_EN


def test_D6_chinese_content_gets_chinese_name_line_golden():
    assert render_conversation(normalise_messages(TIM_JOHN_ZH)) == SPEC_ZH
    # Forcing the language overrides detection.
    assert render_conversation(normalise_messages(TIM_JOHN_ZH), lang="en").startswith(
        "The user's name is Tim\n"
    )


def test_H1_l1_raw_is_the_rendered_form():
    # What is stored is exactly what render produces, and reads back to the messages.
    msgs = normalise_messages(TIM_JOHN_EN)
    assert parse_l1_raw(render_conversation(msgs)) == msgs


def test_H2_leading_name_line_is_recognised_and_deduplicated():
    text = "The user's name is Tim\nThe user's name is Tim\n" + SPEC_EN.split("\n", 1)[1]
    parsed = read_l1_raw(text)
    assert parsed.user_name == "Tim"
    assert [m.role for m in parsed.messages] == ["user", "assistant"]
    assert all("name is" not in m.content for m in parsed.messages)
    zh = read_l1_raw(SPEC_ZH + "\n用户名叫Tim\n[user]: 还有我骑车。")
    assert zh.user_name == "Tim" and len(zh.messages) == 3
    assert zh.messages[2] == ChatMessage("user", "还有我骑车。", "Tim")


def test_H3_named_labels_are_kept():
    msgs = parse_l1_raw(SPEC_ZH)
    assert msgs[1] == ChatMessage("assistant", "我是住在柏林的护士。", "John")
    assert parse_l1_raw("[assistant]: Noted.") == [ChatMessage("assistant", "Noted.")]


def test_H4_multiline_split_only_at_speaker_prefixes():
    text = (
        "[user]: My list:\n"
        "Note: [draft]\n"
        "[draft] second line\n"
        "[x]no space after colon\n"
        "  [John]: indented is not a label\n"
        "[assistant]: ok"
    )
    msgs = parse_l1_raw(text)
    assert len(msgs) == 2
    assert msgs[0].content == (
        "My list:\nNote: [draft]\n[draft] second line\n[x]no space after colon\n"
        "  [John]: indented is not a label"
    )


def test_H5_history_truncates_others_keeps_user_whole():
    long = "x" * 50
    msgs = [
        ChatMessage("user", long, "Tim"),
        ChatMessage("assistant", long, "John"),
        ChatMessage("assistant", long),
        ChatMessage("assistant", "short"),
    ]
    out = history_context(msgs, 10)
    assert out[0].content == long
    assert out[1].content == "x" * 9 + "…" and len(out[1].content) == 10
    assert out[2].content == "x" * 9 + "…"
    assert out[3].content == "short"
    with pytest.raises(ValueError):
        history_context(msgs, 0)

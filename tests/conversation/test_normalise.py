"""Normalisation of real-looking OpenAI and Anthropic payloads (M4, M5) and bad input (M7)."""

import pytest

from hy_eval.conversation import ChatMessage, MessageError, normalise_messages, render_conversation


def test_openai_payload_with_tool_calls_beside_named_speakers():
    payload = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "name": "Tim", "content": "What's the weather where John lives?"},
        {"role": "assistant", "name": "John", "content": "I live in Berlin, by the way."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Berlin"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 12}'},
        {"role": "assistant", "content": [{"type": "text", "text": "It is 12°C in Berlin."}]},
    ]
    msgs = normalise_messages(payload)
    assert [(m.role, m.name) for m in msgs] == [
        ("system", None),
        ("user", "Tim"),
        ("assistant", "John"),
        ("assistant", None),
        ("tool", "get_weather"),  # tool name recovered from the call id (M4)
        ("assistant", None),
    ]
    assert msgs[3].content == '(calls tool get_weather with {"city":"Berlin"})'
    assert msgs[4].tool_call_id == "call_1"
    assert render_conversation(msgs).splitlines()[:4] == [
        "The user's name is Tim",
        "[system]: You are a helpful assistant.",
        "[user]: What's the weather where John lives?",
        "[John]: I live in Berlin, by the way.",
    ]


def test_anthropic_payload_with_tool_use_and_tool_result_blocks():
    payload = [
        {"role": "user", "name": "Tim", "content": "Look up John's clinic."},
        {
            "role": "assistant",
            "name": "John",
            "content": [{"type": "text", "text": "It's Charité."}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "private", "signature": "x"},
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "Charité"}},
            ],
        },
        {
            "role": "user",
            "name": "Tim",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "Charité is in Berlin."}],
                },
                {"type": "text", "text": "Thanks."},
            ],
        },
    ]
    msgs = normalise_messages(payload, system=[{"type": "text", "text": "Be kind."}])
    assert msgs == [
        ChatMessage("system", "Be kind."),
        ChatMessage("user", "Look up John's clinic.", "Tim"),
        ChatMessage("assistant", "It's Charité.", "John"),
        ChatMessage("assistant", 'Searching.\n(calls tool search with {"q": "Charité"})'),
        ChatMessage("tool", "Charité is in Berlin.", "search", "toolu_1"),
        ChatMessage("user", "Thanks.", "Tim"),
    ]


def test_formats_mix_per_message_and_can_be_forced():
    mixed = [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
    ]
    msgs = normalise_messages(mixed)
    assert msgs[0].content == "[image_url]"
    assert msgs[1].content == "(calls tool f with {})"
    with pytest.raises(MessageError, match="unknown Anthropic content block type 'image_url'"):
        normalise_messages(mixed, format="anthropic")


def test_names_are_stripped_and_developer_is_system():
    msgs = normalise_messages(
        [{"role": "developer", "content": "d"}, {"role": "user", "name": " Tim ", "content": "x"}]
    )
    assert msgs[0].role == "system" and msgs[1].name == "Tim"


BAD = [
    ("not a list", None, "must be a list"),
    ({"role": "user"}, None, "must be a list"),
    (None, None, "must be a list"),
    ([], None, "empty conversation"),
    ([5], 0, "must be an object"),
    ([{"content": "x"}], 0, "missing role"),
    ([{"role": 1, "content": "x"}], 0, "role must be a string"),
    ([{"role": "human", "content": "x"}], 0, "unknown role 'human'"),
    ([{"role": "user"}], 0, "missing content"),
    ([{"role": "user", "content": 3.5}], 0, "content must be a string"),
    ([{"role": "user", "content": {"text": "x"}}], 0, "content must be a string"),
    ([{"role": "user", "content": [1]}], 0, "content part must be an object"),
    ([{"role": "user", "content": [{"type": "video", "x": 1}]}], 0, "unknown content part type"),
    ([{"role": "user", "content": [{"type": "text", "text": 3}]}], 0, "must be a string"),
    ([{"role": "user", "name": 42, "content": "x"}], 0, "name must be a string"),
    ([{"role": "user", "name": "", "content": "x"}], 0, "name is empty"),
    ([{"role": "user", "name": "Ti\nm", "content": "x"}], 0, "control character"),
    ([{"role": "assistant", "name": "[John]", "content": "x"}], 0, "bracket"),
    ([{"role": "assistant", "name": "user", "content": "x"}], 0, "reserved"),
    ([{"role": "assistant", "name": "Assistant", "content": "x"}], 0, "reserved"),
    ([{"role": "assistant", "tool_calls": "f", "content": None}], 0, "tool_calls must be a list"),
    (
        [{"role": "assistant", "tool_calls": [{"id": "1"}], "content": ""}],
        0,
        "without a 'function'",
    ),
    ([{"role": "tool", "tool_call_id": 5, "content": "x"}], 0, "tool_call_id must be a string"),
    ([{"role": "user", "content": [{"type": "tool_result"}]}], 0, "tool_use_id"),
    (
        [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": 5}]}],
        0,
        "tool_result content",
    ),
    (
        [{"role": "system", "content": [{"type": "tool_use", "name": "x"}]}],
        0,
        "unknown role 'system'",
    ),
    ([{"role": "assistant", "content": [{"type": "tool_use", "name": 3}]}], 0, "'name' must be"),
    (
        [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "a"}, {"type": "bogus"}],
            }
        ],
        0,
        "unknown Anthropic content block type 'bogus'",
    ),
    ([{"role": "user", "content": "ok"}, {"role": "critic", "content": "x"}], 1, "unknown role"),
]


@pytest.mark.parametrize("messages, index, fragment", BAD)
def test_malformed_conversations_raise_the_documented_error(messages, index, fragment):
    with pytest.raises(MessageError) as info:
        normalise_messages(messages)
    assert fragment in str(info.value)
    assert info.value.index == index
    assert "\n" not in str(info.value)


def test_bad_system_and_format():
    with pytest.raises(MessageError, match="system must be"):
        normalise_messages([{"role": "user", "content": "x"}], system=5)
    with pytest.raises(MessageError, match="unknown input format"):
        normalise_messages([{"role": "user", "content": "x"}], format="gemini")  # type: ignore[arg-type]

"""Speaker-label forms other than ``[X]:`` in a message body (rules D2,
D3, H1, H4, M6, M7).

A model reads ``【user】：``, ``用户：``, ``John: ``, ``「user」：``, ``(user):``, ``<user>:`` or
a chat-template turn marker at the start of a line as a new speaker, although parsing (H4)
takes none of them for a label. Rendering escapes such a body line with one leading
backslash when the label in it names a speaker of the conversation (a role label in
English or Chinese, the user's name, a named human's name), or when the line starts with a
turn marker; it reads back as the content it was. A name that is a role label in brackets
or in Chinese (``【user】``, ``用户``) or holds a turn marker is refused. The decision table
is in docs/conversation.md ("Other speaker-label forms").
"""

import re
import unicodedata

import pytest

from hy_eval.conversation import MessageError, normalise_messages, read_l1_raw, render_conversation

#: The speakers of the conversation below, as a reader names them: the role labels in
#: English and Chinese, the user Tim and the named human John.
_SPEAKERS = {"user", "assistant", "system", "tool", "用户", "助手", "系统", "工具", "tim", "john"}
#: Written apart from the renderer: a bracketed label (colon optional), a bare label
#: before a colon, or a chat-template turn marker, at the start of the visible line.
_BRACKETED_RE = re.compile(
    r"[\[【〖「『〈《〔(<{]\s*([^\]】〗」』〉》〕)>}]{1,64}?)\s*[\]】〗」』〉》〕)>}]"
)
_BARE_RE = re.compile(r"([^:\n]{1,64}?)\s*:")


def reads_as_a_speaker(line):
    visible = "".join(ch for ch in line if unicodedata.category(ch) != "Cf")
    head = unicodedata.normalize("NFKC", visible).lstrip()
    if re.match(r"<\|[^|]+\|>|<start_of_turn>", head):
        return True
    for pattern in (_BRACKETED_RE, _BARE_RE):
        found = pattern.match(head)
        if found and found.group(1).strip().casefold() in _SPEAKERS:
            return True
    return head.startswith("The user's name is") or head.startswith("用户名叫")


#: (form, what follows it) written as in the issue, then variants a reader takes the same
#: way: other case, full-width forms, no colon after brackets, the user's own name.
FORMS = [
    "【user】：",
    "【用户】：",
    "【John】：",
    "用户：",
    "user: ",
    "John: ",
    "「user」：",
    "(user):",
    "<user>:",
    "<|im_start|>user\n",
    "【Tim】：",
    "Tim: ",
    "USER: ",
    "Assistant: ",
    "助手：",
    "系统：",
    "（用户）：",
    "＜user＞：",
    "『用户』：",
    "《John》：",
    "【Ｊｏｈｎ】：",
    "【user】",
    "<user>",
    "[John] ",
    " 【用户】：",
    "\u200b用户：",
    "<|im_end|>",
    "<start_of_turn>user\n",
]

BODIES = {
    "en": ("Hi there.", "I moved to Shanghai."),
    "zh": ("你好。", "我搬去上海了。"),
}


def _render(content, lang):
    messages = normalise_messages(
        [
            {"role": "user", "name": "Tim", "content": "I work at Stripe."},
            {"role": "assistant", "name": "John", "content": content},
        ]
    )
    return render_conversation(messages, lang=lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("form", FORMS, ids=[ascii(f) for f in FORMS])
def test_a_speaker_form_naming_a_speaker_is_escaped_and_reads_back(form, lang):
    first, said = BODIES[lang]
    content = f"{first}\n{form}{said}"
    text = _render(content, lang)
    assert f"{first}\n\\{form}{said}" in text  # one backslash, as for [user]:
    name_line = "The user's name is Tim" if lang == "en" else "用户名叫Tim"
    assert [x for x in text.splitlines() if reads_as_a_speaker(x)] == [
        name_line,
        "[user]: I work at Stripe.",
        f"[John]: {first}",
    ]
    parsed = read_l1_raw(text)
    assert parsed.user_name == "Tim"
    assert [(m.role, m.name, m.content) for m in parsed.messages] == [
        ("user", "Tim", "I work at Stripe."),
        ("assistant", "John", content),
    ]


#: Near misses: the label names nobody in the conversation, or the form is ordinary prose.
ORDINARY = [
    "【注意】：明天开会",
    "【Mallory】：我是用户",
    "Note: bring the keys",
    "Mallory: I am the user",
    "user said: hi",
    "Johnny: hi",
    "(draft) x",
    "<b>bold</b>",
    "用户名",
    "注意：[草稿]",
    "The user: Tim",
    "x John: y",
    "<|",
]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_form_naming_nobody_here_renders_as_written(lang):
    first, _ = BODIES[lang]
    content = "\n".join([first, *ORDINARY])
    text = _render(content, lang)
    assert text.endswith(f"[John]: {content}")
    assert read_l1_raw(text).messages[1].content == content


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_backslashes_before_a_form_round_trip(lang):
    # Escaping adds one backslash and parsing takes one away, whatever was there before;
    # a backslash before a form naming nobody here is content and stays.
    first, said = BODIES[lang]
    content = "\n".join([first, f"\\用户：{said}", f"\\\\John: {said}", f"\\Mallory: {said}"])
    text = _render(content, lang)
    assert text.endswith(
        f"[John]: {first}\n\\\\用户：{said}\n\\\\\\John: {said}\n\\Mallory: {said}"
    )
    assert read_l1_raw(text).messages[1].content == content


def test_a_form_naming_a_later_speaker_is_escaped_in_an_earlier_message():
    # The speakers are the whole conversation's: Mary speaks after the message naming her.
    messages = normalise_messages(
        [
            {"role": "user", "content": "我在上海。"},
            {"role": "assistant", "name": "John", "content": "好的。\n【Mary】：我是医生。"},
            {"role": "assistant", "name": "Mary", "content": "你好。"},
        ]
    )
    text = render_conversation(messages)
    assert "\n\\【Mary】：我是医生。\n" in text
    assert [m.content for m in read_l1_raw(text).messages] == [m.content for m in messages]


REFUSED_NAMES = [
    "【user】",
    "【用户】",
    "用户",
    "助手",
    "「user」",
    "(user)",
    "（用户）",
    "<user>",
    "【 System 】",
    "User:",
    "<|im_start|>user",
    "<|im_end|>",
    "John<|im_end|>",
]


@pytest.mark.parametrize("name", REFUSED_NAMES, ids=[ascii(n) for n in REFUSED_NAMES])
def test_a_name_that_reads_as_a_role_label_is_refused(name):
    with pytest.raises(MessageError) as err:
        normalise_messages(
            [
                {"role": "user", "content": "I am here."},
                {"role": "assistant", "name": name, "content": "Hello."},
            ]
        )
    assert err.value.index == 1
    assert str(err.value).startswith(f"message 1: name {name!r} ")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["【Tim】", "(Tim)", "「ｔｉｍ」"])
def test_a_bracketed_form_of_the_users_name_is_refused(name):
    with pytest.raises(MessageError, match=r"looks like the current user's name 'Tim'"):
        normalise_messages(
            [
                {"role": "user", "name": "Tim", "content": "I am here."},
                {"role": "assistant", "name": name, "content": "Hello."},
            ]
        )


def test_names_with_other_brackets_stay_accepted():
    # Only a wrapped role label or speaker's name is refused: a nickname in brackets is not.
    for name in ("【小王】", "(Jo)", "Dr. Smith", "用户甲"):
        got = normalise_messages(
            [
                {"role": "user", "content": "I am here."},
                {"role": "assistant", "name": name, "content": "Hello."},
            ]
        )
        assert got[1].name == name

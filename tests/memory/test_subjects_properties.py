"""Property tests for ``subject_of`` (A1-A3, A6, A8): generated sentences in
English and Chinese whose generator knows the right subject. Names are Latin, CJK, titled,
hyphenated, with apostrophes, common words, aliases, full-width; the subject stands
first, in a possessive, after a clause, or in quotes and brackets; predicates carry the
common words ("may", "will", "hope", "mark", "bill") that must not read as names."""

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from hy_eval.memory import Speakers, Subject, subject_of

LATIN = ["John", "Anna", "Chloé", "Siobhan", "Anne-Marie", "Jean-Luc", "O'Brien", "Li", "Li Wei"]
TITLED = {"Dr. Smith": ["Dr Smith", "Doctor Smith", "Smith"], "Professor Ng": ["Prof. Ng", "Ng"]}
COMMON = ["May", "Will", "Hope", "Mark", "Bill"]
CJK = ["王伟", "李娜", "张老师", "林小雨", "春天"]
ALIASES = {"王伟": ["Wang Wei"], "李娜": ["Li Na"]}
#: People mentioned who are not speakers (subject kind ``other``).
OTHERS = ["Theo", "Priya", "Dr. Patel", "Marie-Claire", "O'Neill"]
USERS = ["Tim", "小杰", None]

PREDICATES = {
    "en": [
        "is a nurse in Berlin",
        "may move to Oslo next year",
        "will go skiing in March",
        "likes tea more than coffee",
        "has a bill to pay",
        "can mark exams quickly",
        "keeps hope alive",
    ],
    "zh": ["是护士", "在准备CFA二级考试", "下个月搬去上海", "会拉大提琴", "喜欢喝茶", "说will也行"],
}
#: Where the subject stands: (name, function of subject form and predicate).
TEMPLATES = {
    "en": {
        "first": lambda s, p: f"{s} {p}.",
        "possessive": lambda s, p: f"{s}'s sister {p}.",
        "after_clause": lambda s, p: f"Last week, {s} {p}.",
        "after_year": lambda s, p: f"In 2021 {s} {p}.",
        "quoted": lambda s, p: f"“{s}” {p}.",
        "bracketed": lambda s, p: f"({s}) {p}.",
    },
    "zh": {
        "no_space": lambda s, p: f"{s}{p}。",
        "space": lambda s, p: f"{s} {p}。",
        "possessive": lambda s, p: f"{s}的妹妹{p}。",
        "after_clause": lambda s, p: f"上周{s}{p}。",
        "quoted": lambda s, p: f"「{s}」{p}。",
        "bracketed": lambda s, p: f"（{s}）{p}。",
    },
}


def full_width(text):
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalpha() else c for c in text)


@dataclass
class Example:
    text: str
    speakers: Speakers
    expected: Subject


def _forms(name):
    forms = [name, *TITLED.get(name, []), *ALIASES.get(name, [])]
    return forms + [full_width(f) for f in forms if f.isascii()]


@st.composite
def examples(draw):
    lang = draw(st.sampled_from(["en", "zh"]))
    user = draw(st.sampled_from(USERS))
    pool = LATIN + list(TITLED) + COMMON + CJK
    named = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True))
    aliases = {n: a for n, a in ALIASES.items() if n in named}
    speakers = Speakers.of(user, named, aliases)
    kind = draw(st.sampled_from(["user", "user_by_name", "assistant", "named", "other"]))
    template = draw(st.sampled_from(sorted(TEMPLATES[lang])))
    start = template in ("first", "possessive", "no_space", "space")
    if kind == "user":
        form = {"en": "The user", "zh": "用户"}[lang]
        expected = Subject("user")
    elif kind == "user_by_name" and user:
        form = user
        expected = Subject("user", by_name=True)
    elif kind == "assistant":
        form = {"en": "The assistant", "zh": "助手"}[lang]
        expected = Subject("assistant")
    elif kind == "other":
        name = draw(st.sampled_from(OTHERS))
        form = draw(st.sampled_from([name, full_width(name)]))
        expected = Subject("other", name)
    else:
        name = draw(st.sampled_from(named))
        form = draw(st.sampled_from(_forms(name)))
        expected = Subject("named", name)
    if lang == "en" and not start and form.startswith("The "):
        form = "the " + form[4:]  # mid-sentence: "Last week, the user ..."
    text = TEMPLATES[lang][template](form, draw(st.sampled_from(PREDICATES[lang])))
    return Example(text, speakers, expected)


@settings(max_examples=300, deadline=None)
@given(examples())
def test_generated_sentences_read_back_their_subject(ex):
    assert subject_of(ex.text, ex.speakers) == ex.expected, ex.text


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(COMMON),
    st.sampled_from(["en", "zh"]),
    st.sampled_from(["user", "assistant", "other"]),
)
def test_common_word_names_stay_safe(name, lang, who):
    # A speaker named May/Will/... is not the subject of a sentence that only uses the
    # word: "The user may move", "It will rain", "用户may会来".
    speakers = Speakers.of("Tim", [name])
    word = name.lower()
    subject = {"user": "The user", "assistant": "The assistant", "other": "Theo"}[who]
    text = f"{subject} {word} go." if lang == "en" else f"{subject}说{word}也行。"
    expected = Subject("other", "Theo") if who == "other" else Subject(who)  # type: ignore[arg-type]
    assert subject_of(text, speakers) == expected
    assert subject_of(f"It {word} rain tomorrow.", speakers).kind == "unknown"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["Li", "Wei", "Li Wei", "王伟", "王伟先生"]), st.booleans())
def test_longest_overlapping_name_wins(subject, zh):
    speakers = Speakers.of(None, ["Li", "Wei", "Li Wei", "王伟", "王伟先生"])
    text = f"{subject}{'在上海工作' if zh else ' works in Shanghai'}。"
    assert subject_of(text, speakers) == Subject("named", subject)

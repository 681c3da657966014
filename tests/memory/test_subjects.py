"""``subject_of``: who a fact is about (A1-A3, A5-A6), used by the guard and the harness."""

import pytest

from hy_eval.memory import Speakers, Subject, same_subject, subject_of

SP = Speakers.of("Tim", ["John", "May", "Will", "Li Wei", "Li", "王伟", "Dr. Smith"])


@pytest.mark.parametrize(
    "text, kind, name, by_name",
    [
        # the user (A1), case and whitespace variants
        ("The user works at Stripe.", "user", None, False),
        ("the user likes coffee", "user", None, False),
        ("THE   USER lives in Oslo", "user", None, False),
        ("User is vegetarian.", "user", None, False),
        ("The user's brother Theo moved to Oslo.", "user", None, False),  # A6 circle
        ("Yesterday the user started a new job.", "user", None, False),
        ("用户在 Stripe 工作。", "user", None, False),
        ("用户的女儿朵朵上小学了。", "user", None, False),
        ("该用户喜欢咖啡", "user", None, False),
        ("\u3000用户喜欢喝茶", "user", None, False),  # full-width space, NFKC
        # the user named by their own name: user, but non-canonical
        ("Tim works at Stripe.", "user", None, True),
        ("Tim's sister is a pilot.", "user", None, True),
        ("Tim 喜欢咖啡。", "user", None, True),
        # named humans (A2), possessives (A6)
        ("John is a nurse in Berlin.", "named", "John", False),
        ("John's sister is a pilot.", "named", "John", False),
        ("john likes coffee", "named", "John", False),  # case at the start
        ("John 的妹妹是飞行员。", "named", "John", False),
        ("王伟在学校教钢琴。", "named", "王伟", False),
        ("王伟的猫叫咪咪", "named", "王伟", False),
        ("Li Wei moved to Shanghai.", "named", "Li Wei", False),  # longest name wins
        ("Li plays chess.", "named", "Li", False),
        ("Dr. Smith is a dentist.", "named", "Dr. Smith", False),
        ("May likes tea.", "named", "May", False),
        ("Will is a chef.", "named", "Will", False),
        ("In 2020 John moved to Hamburg.", "named", "John", False),
        ("John told the user about his trip.", "named", "John", False),
        # the assistant (A3)
        ("The assistant suggested a climbing gym.", "assistant", None, False),
        ("Assistant recommended Python.", "assistant", None, False),
        ("The AI assistant wrote a poem.", "assistant", None, False),
        ("助手推荐了十字山的攀岩馆。", "assistant", None, False),
        ("AI 助手建议早睡。", "assistant", None, False),
        # common words are not names mid-sentence
        ("It may rain in Berlin tomorrow.", "unknown", None, False),
        ("They will go skiing.", "unknown", None, False),
        ("Theo moved to Oslo.", "other", "Theo", False),  # not a speaker: other (A8)
        ("", "unknown", None, False),
    ],
)
def test_subject_of(text, kind, name, by_name):
    assert subject_of(text, SP) == Subject(kind, name, by_name)


def test_earliest_mention_wins_and_keys():
    assert subject_of("The user and John both like coffee.", SP).kind == "user"
    assert subject_of("John and the user both like coffee.", SP).key == "named:john"
    assert subject_of("The user likes coffee.", SP).key == "user"


def test_without_speakers_names_are_other():
    assert subject_of("John is a nurse.") == Subject("other", "John")  # A8
    assert subject_of("The user is a nurse.").kind == "user"


def test_same_subject_for_the_guard():
    user = subject_of("The user likes coffee.", SP)
    john = subject_of("John likes coffee.", SP)
    unknown = subject_of("喜欢咖啡。", SP)
    assert not same_subject(user, john)
    assert same_subject(user, subject_of("用户喜欢咖啡", SP))
    # Unknown is no wildcard (R2), not even for another unknown.
    assert not same_subject(user, unknown) and not same_subject(unknown, john)
    assert not same_subject(unknown, unknown)
    assert same_subject(john, subject_of("JOHN drinks espresso", SP))


# -- names in every form (A8) ----------------------------------------------------------

ZH = Speakers.of("Tim", ["John", "Lily", "Anne-Marie", "O'Brien", "Dr. Smith", "Professor Ng"])


@pytest.mark.parametrize(
    "text, expected",
    [
        # a Latin name straight before Chinese text (\w counts 是 as a letter)
        ("John是护士", Subject("named", "John")),
        ("Lily在准备CFA二级考试", Subject("named", "Lily")),
        ("Tim下个月搬去上海", Subject("user", by_name=True)),
        ("John会拉大提琴", Subject("named", "John")),
        ("和John一起去的是Lily", Subject("named", "John")),
        # full-width letters
        ("Ｊｏｈｎ是护士", Subject("named", "John")),
        ("ＪＯＨＮ是护士", Subject("named", "John")),  # any case at the start
        # hyphens and apostrophes join words
        ("Anne-Marie likes tea.", Subject("named", "Anne-Marie")),
        ("Anne‑Marie likes tea.", Subject("named", "Anne-Marie")),  # non-breaking hyphen
        ("O'Brien's dog is old.", Subject("named", "O'Brien")),
        ("O’Brien is a pilot.", Subject("named", "O'Brien")),
        ("Marie likes tea.", Subject("other", "Marie")),  # not Anne-Marie
        # quotes and brackets
        ("“John” is a nurse.", Subject("named", "John")),
        ("(John) is a nurse.", Subject("named", "John")),
        ("「John」是护士。", Subject("named", "John")),
        ("【John】是护士。", Subject("named", "John")),
        # titles
        ("Dr Smith is on holiday.", Subject("named", "Dr. Smith")),
        ("Doctor Smith is on holiday.", Subject("named", "Dr. Smith")),
        ("Smith is on holiday.", Subject("named", "Dr. Smith")),
        ("Prof. Ng moves the lab in September.", Subject("named", "Professor Ng")),
        ("Ng moves the lab.", Subject("named", "Professor Ng")),
        ("Smith医生下周休假。", Subject("named", "Dr. Smith")),
    ],
)
def test_names_next_to_cjk_full_width_joined_quoted_titled(text, expected):
    assert subject_of(text, ZH) == expected


def test_chinese_titles_and_aliases():
    sp = Speakers.of("小杰", ["王伟", "李娜", "张老师"], {"王伟": ["Wang Wei"], "李娜": ["Li Na"]})
    assert subject_of("Wang Wei teaches piano.", sp) == Subject("named", "王伟")
    assert subject_of("Li Na's cat is called Mimi.", sp) == Subject("named", "李娜")
    assert subject_of("王伟先生在学校教钢琴。", sp) == Subject("named", "王伟")
    assert subject_of("张老师下学期去北京进修。", sp) == Subject("named", "张老师")
    titled = Speakers.of(None, ["王伟先生"])
    assert subject_of("王伟在学校教钢琴。", titled) == Subject("named", "王伟先生")
    # an alias of the user's own name is the user, named by name
    me = Speakers.of("王伟", ["John"], {"王伟": ["Wang Wei"]})
    assert subject_of("Wang Wei works at Stripe.", me) == Subject("user", by_name=True)
    with pytest.raises(ValueError, match="not a speaker"):
        Speakers.of("Tim", ["John"], {"Jo": ["Joanna"]})


def test_a_name_that_is_not_a_speaker_is_other():
    # ms-en-0083: Tim and Jo speak; the stored memory is about John.
    sp = Speakers.of("Tim", ["Jo"])
    john = subject_of("John is a nurse in Berlin.", sp)
    jo = subject_of("Jo is a nurse at the children's hospital.", sp)
    assert john == Subject("other", "John") and jo == Subject("named", "Jo")
    assert not same_subject(john, jo) and not same_subject(john, subject_of("The user", sp))
    assert john.key == "other:john" and john.identity == "person:john"
    # the same person as a speaker elsewhere, and under a title
    assert same_subject(john, Subject("named", "John"))
    assert Subject("named", "Dr. Smith").identity == Subject("other", "Smith").identity
    assert subject_of("In 2020, Jean-Luc moved to Paris.") == Subject("other", "Jean-Luc")
    assert subject_of("Dr. Patel is on holiday.") == Subject("other", "Dr. Patel")
    assert subject_of("Last week Tom quit.") == Subject("other", "Tom")
    assert subject_of("李医生下周休假。") == Subject("other", "李医生")
    assert subject_of("王芳是老师。") == Subject("other", "王芳")
    assert subject_of("It may rain in Berlin tomorrow.").kind == "unknown"
    assert subject_of("周末很忙。").kind == "unknown"
    # subjectless facts and first-person contractions name nobody (seen in the cassette)
    assert subject_of("Works night shifts.").kind == "unknown"
    assert subject_of("I'm at Adyen now.").kind == "unknown"
    assert subject_of("I've flown this route for twelve years.").kind == "unknown"


@pytest.mark.parametrize(
    "subject",
    [Subject("user"), Subject("assistant"), Subject("named", "John"), Subject("other", "Theo")],
)
def test_stored_keys_round_trip(subject):
    back = Subject.from_key(subject.key)
    assert back.key == subject.key and back.identity == subject.identity
    assert Subject.from_key(None).kind == "unknown" and Subject.from_key("junk").kind == "unknown"

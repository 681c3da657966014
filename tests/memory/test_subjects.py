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
        ("Theo moved to Oslo.", "other", "Theo", False),  # not a speaker: other (A8, issue 15)
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
    assert subject_of("John is a nurse.") == Subject("other", "John")  # A8, issue 15
    assert subject_of("The user is a nurse.").kind == "user"


def test_same_subject_for_the_guard():
    user = subject_of("The user likes coffee.", SP)
    john = subject_of("John likes coffee.", SP)
    unknown = subject_of("喜欢咖啡。", SP)
    assert not same_subject(user, john)
    assert same_subject(user, subject_of("用户喜欢咖啡", SP))
    # issue 15: unknown is no wildcard (R2), not even for another unknown.
    assert not same_subject(user, unknown) and not same_subject(unknown, john)
    assert not same_subject(unknown, unknown)
    assert same_subject(john, subject_of("JOHN drinks espresso", SP))

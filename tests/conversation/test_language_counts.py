"""``language_counts`` (D6) counts with two regular expressions; it must count exactly
as the rule's plain definition does, character by character, on any text."""

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from hy_eval.conversation._render import is_cjk, language_counts


def counted_by_hand(text: str) -> tuple[int, int]:
    """The rule as written: Han characters, and runs of Latin letters (ASCII letters or
    letters below U+0250) that anything else ends."""
    han = words = 0
    in_word = False
    for ch in text:
        if is_cjk(ch):
            han += 1
            in_word = False
        elif (ch.isascii() and ch.isalpha()) or (
            not ch.isascii() and unicodedata.category(ch).startswith("L") and ch < "\u0250"
        ):
            words += 0 if in_word else 1
            in_word = True
        else:
            in_word = False
    return han, words


#: Characters around every edge the rule has: ASCII, Latin-1 and Latin Extended (letters,
#: × and ÷), the first letters past U+0250, each Han range's ends, full-width and
#: mathematical letters (letters, not Latin ones).
_EDGES = (
    [chr(c) for c in range(0x300)]
    + [
        chr(c)
        for c in (0x3400, 0x4DBF, 0x4DC0, 0x4E00, 0x9FFF, 0xA000, 0xF900, 0xFAFF, 0x20000, 0x2A6DF)
    ]
    + ["Ａ", "𝐀", "\u00d7", "\u00f7", "ß", "ł", "ɐ"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(_EDGES), max_size=40), max_size=3))
def test_counts_as_the_rule_reads(texts: list[str]) -> None:
    expected = tuple(map(sum, zip(*(counted_by_hand(t) for t in texts), strict=True)))
    assert language_counts(texts) == (expected or (0, 0))


@given(st.text(max_size=60))
def test_counts_any_text_as_the_rule_reads(text: str) -> None:
    assert language_counts(text) == counted_by_hand(text)


def test_examples() -> None:
    assert language_counts("Café déjà vu, 你") == (1, 3)
    assert language_counts("我在Stripe工作") == (4, 1)
    assert language_counts("a×b ɐb") == (0, 3)  # × ends a word; ɐ (U+0250) is not Latin here

"""The words of a fact, as the fuzzy matcher and the LoCoMo keyword choice read them.

Text is NFKC-normalised and case-folded first. Latin text is split into word tokens
(letters or digits, with inner apostrophes); a run of Chinese characters is split at a few
function characters (的, 了, 是, ...) and each piece gives its character bigrams (a piece of
one character gives that character), so Chinese needs no word segmentation. Mixed text
gives both kinds of feature.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

#: Han characters (CJK unified ideographs, extension A, compatibility ideographs).
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_LETTER = rf"(?:(?![{HAN}])[^\W_])"
_TOKEN_RE = re.compile(rf"(?P<han>[{HAN}]+)|(?P<word>{_LETTER}+(?:['’]{_LETTER}+)*)")


def word_set(text: str) -> frozenset[str]:
    """The words of a whitespace-separated list, as a set."""
    return frozenset(text.split())


def split_words(text: str) -> list[str]:
    return text.split()


#: English function words and a few words every fact sentence uses ("user", the subject
#: placeholder, is no content). Short on purpose: content words must survive.
STOP_WORDS = word_set(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself of off on once only or other
    our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t
    user assistant
    """
)

#: Words that negate a Latin sentence. Chinese negation (不, 没) is not detected: both
#: characters are parts of many words that negate nothing (不错, 没关系 aside).
NEGATIONS = word_set("not no never nobody nothing none cannot neither")

_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        split_words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
}
_NUMBER_WORDS.update(
    {
        w: str(10 * i)
        for i, w in enumerate(split_words("thirty forty fifty sixty seventy eighty ninety"), 3)
    }
)

#: The subject placeholders of Chinese facts (as "user" and "assistant" are stop words):
#: the subject is scored apart, so they are no content.
ZH_SUBJECT_WORDS = ("用户", "助手")

#: Chinese function characters a run is split at: they carry no content of their own.
_HAN_STOPS = frozenset("的了是在也和与及就都而呢吗吧啊着过被把很")


def fold(text: str) -> str:
    """NFKC and case folding: the form every comparison here works on."""
    return unicodedata.normalize("NFKC", text).casefold()


def latin_words(text: str) -> list[str]:
    """The Latin word tokens of ``text`` in order, folded, as they occur in it."""
    return [m.group("word") for m in _TOKEN_RE.finditer(fold(text)) if m.group("word")]


def is_negated(text: str) -> bool:
    """Whether a Latin sentence carries a negation word (``not``, ``never``, ``n't`` ...)."""
    return any(w in NEGATIONS or w.endswith(("n't", "n’t")) for w in latin_words(text))


def word_form(word: str) -> str:
    """A folded Latin word in the form token sets compare: no possessive ``'s``, number
    words as digits up to 20 and the tens, and a crude plural strip (``dances`` ->
    ``dance``, ``studies`` -> ``study``) that both sides of a comparison get alike."""
    word = re.sub(r"['’]s$", "", word)
    word = _NUMBER_WORDS.get(word, word)
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def features(text: str, ignore: Iterable[str] = ()) -> set[str]:
    """The content features of ``text``: Latin content words (``word_form``) and Chinese
    character bigrams. ``ignore`` lists strings that are no content here, such as the
    speakers' names: Latin ones are dropped as words, Chinese ones cut out of the text
    (用户 and 助手 always are)."""
    folded = fold(text)
    skip_words: set[str] = set()
    for item in (*ignore, *ZH_SUBJECT_WORDS):
        f = fold(item)
        if re.search(f"[{HAN}]", f):
            folded = folded.replace(f, " ")
        skip_words.update(word_form(w) for w in latin_words(f))
    out: set[str] = set()
    for m in _TOKEN_RE.finditer(folded):
        raw = m.group("word")
        if raw:
            w = word_form(raw)
            if not ({raw, w} & (STOP_WORDS | NEGATIONS | skip_words) or "n't" in raw):
                out.add(w)
            continue
        for piece in re.split("[" + "".join(sorted(_HAN_STOPS)) + "]", m.group("han")):
            if len(piece) == 1:
                out.add(piece)
            out.update(piece[i : i + 2] for i in range(len(piece) - 1))
    return out

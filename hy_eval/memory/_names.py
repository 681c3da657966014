"""Finding people's names in a fact's text (A8): the forms a name is written in and where
a name may stand. ``_subjects.py`` builds ``subject_of`` on these.

Normal form. Every comparison works on ``normalise_text``: Unicode NFKC (full-width letters
such as "Ｊｏｈｎ" become "John", the ideographic space a space), whitespace collapsed,
typographic apostrophes (’ ‘ ʼ) written ``'`` and Unicode hyphens (‐ ‑ ‒ −) written ``-``.

Boundary rule, decided per script at each end of a name:

- A name that ends (or starts) with a Latin-script letter or a digit needs a boundary on
  that side: the neighbouring character must not be a letter or digit of a script written
  with spaces. Han ideographs and kana are not such letters, so "John" is found in
  "John是护士" and "和John一起" (Python's ``\\w`` would count 是 as part of the word), and
  punctuation, quotes and brackets are boundaries ("“John”", "(John)", "「John」").
  A hyphen or apostrophe joins two words: "Anne" is not found in "Anne-Marie", nor "Brien"
  in "O'Brien"; the possessive "John's"/"James'" still ends at the name.
- A name that ends (or starts) with a Han character has no boundary on that side: Chinese
  is written without spaces, so no character tells where a word ends. CJK names match as
  substrings, and the earliest-mention rule of ``subject_of`` keeps common-word names such
  as 春天 from taking over a fact that names its subject first.
- Case: Latin names match in their own case anywhere, and in any case only at the start
  of the text (after opening quotes or brackets), so common-word names stay safe:
  "it may rain" is not May and "they will go" is not Will, but "May likes tea" is May.

Titles. A name with a leading English title ("Dr. Smith", "Professor Ng") is also found as
the bare surname and with any spelling of the same title ("Dr Smith", "Doctor Smith",
"Prof. Ng"); a name with a trailing Chinese title ("王伟先生", "张老师") is also found
without it when at least two characters remain. Aliases declared for a speaker
(``Speakers.aliases``) get the same treatment.

People who are not speakers: ``other_name`` reads a name from text that mentions no known
subject, by a heuristic that looks only where a subject stands: the first Latin-script word
after sentence starters and times ("In", "Yesterday", "Last week", a month, a weekday)
must be capitalised (or a title followed by a capitalised word), and the capitalised words
right after it belong to the name ("John is a nurse", "In 2020 Anne-Marie moved",
"Dr. Patel is on holiday", "John是护士"; but "It may rain in Berlin" names nobody, nor
does a subjectless fact that starts with a common verb, "Works night shifts."). A
capitalised common noun first ("Coffee is great") still reads as a name: the heuristic
has no dictionary. Or, at the start of Chinese text, a common surname with a title
(李医生) or with a one- or two-character given name followed by a verb or particle
(王芳是…, 刘洋在…). What it cannot read stays unknown.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from hy_eval.conversation import is_cjk

#: Spellings of one English title, each group interchangeable.
EN_TITLES: tuple[tuple[str, ...], ...] = (
    ("Dr", "Dr.", "Doctor"),
    ("Prof", "Prof.", "Professor"),
    ("Mr", "Mr.", "Mister"),
    ("Mrs", "Mrs."),
    ("Ms", "Ms."),
    ("Miss",),
    ("Mx", "Mx."),
    ("Capt", "Capt.", "Captain"),
    ("Sir",),
    ("Dame",),
    ("Coach",),
    ("Rev", "Rev.", "Reverend"),
)
_TITLE_GROUP = {t.casefold(): group for group in EN_TITLES for t in group}
#: Chinese titles written after the name.
ZH_TITLES = (
    "先生",
    "女士",
    "小姐",
    "老师",
    "医生",
    "大夫",
    "教授",
    "博士",
    "经理",
    "师傅",
    "总",
)

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "‐": "-", "‑": "-", "‒": "-", "−": "-"})
_OPENERS = "\"'“‘«‹([{【「『《〈"


def normalise_text(text: str) -> str:
    """NFKC, collapsed whitespace, plain apostrophes and hyphens (see the module doc)."""
    return " ".join(unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).split())


def _spaceless(ch: str) -> bool:
    """Han ideographs and kana: scripts written without spaces between words."""
    return is_cjk(ch) or 0x3040 <= ord(ch) <= 0x30FF


def is_word_char(ch: str) -> bool:
    """A letter or digit of a script written with spaces (Latin, Greek, Cyrillic ...)."""
    return (ch.isalnum() or unicodedata.category(ch).startswith("M")) and not _spaceless(ch)


def boundary_before(text: str, pos: int) -> bool:
    """Whether a Latin-script name may start at ``pos``."""
    if pos == 0:
        return True
    prev = text[pos - 1]
    if is_word_char(prev):
        return False
    # "Anne-Marie", "O'Brien": a joiner between two letters is inside a word.
    return not (prev in "-'" and pos >= 2 and is_word_char(text[pos - 2]))


def boundary_after(text: str, end: int) -> bool:
    """Whether a Latin-script name may end at ``end`` (exclusive)."""
    if end >= len(text):
        return True
    nxt = text[end]
    if is_word_char(nxt):
        return False
    if nxt in "-'" and end + 1 < len(text) and is_word_char(text[end + 1]):
        # The possessive ('s) ends the name; any other joined letters continue the word.
        rest = text[end + 1 :]
        return nxt == "'" and rest[0] in "sS" and (len(rest) == 1 or not is_word_char(rest[1]))
    return True


def at_text_start(text: str, pos: int) -> bool:
    """``pos`` is the first letter of the text, after opening quotes, brackets, spaces."""
    return all(ch in _OPENERS or ch.isspace() for ch in text[:pos])


def find_name(text: str, name: str) -> int | None:
    """The first position of ``name`` (normalised already) in ``text`` under the boundary
    and case rules of the module docstring, or None."""
    if not name:
        return None
    latin_start = not _spaceless(name[0])
    latin_end = not _spaceless(name[-1])
    for m in _any_case(name).finditer(text):
        start, end = m.span()
        if m.group(0) != name and not (latin_start and at_text_start(text, start)):
            continue  # another case: only at the start of the text
        if latin_start and not boundary_before(text, start):
            continue
        if latin_end and not boundary_after(text, end):
            continue
        return start
    return None


@lru_cache(maxsize=8192)
def _any_case(name: str) -> re.Pattern[str]:
    # Compiled once per name: suites have thousands of names, past ``re``'s own cache.
    return re.compile(re.escape(name), re.IGNORECASE)


@lru_cache(maxsize=8192)
def name_forms(name: str) -> tuple[str, ...]:
    """The forms ``name`` may be written in (normalised), the name itself first."""
    name = normalise_text(name)
    if not name:
        return ()
    forms = [name]
    first, _, rest = name.partition(" ")
    group = _TITLE_GROUP.get(first.casefold())
    if group and rest:
        forms += [f"{title} {rest}" for title in group] + [rest]
    for title in ZH_TITLES:
        core = name.removesuffix(title)
        if core and core != name and (len(core) >= 2 or not _spaceless(core[-1])):
            forms.append(core.strip())
    out: list[str] = []
    for f in forms:
        if f and f not in out:
            out.append(f)
    return tuple(out)


def core_name(name: str) -> str:
    """A person's identity across name forms: the name without its title, case-folded."""
    forms = name_forms(name)
    return (forms[-1] if len(forms) > 1 else normalise_text(name)).casefold()


# -- names of people who are not speakers ---------------------------------------------

_LATIN = r"A-Za-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F"
# A word, joined words ("Anne-Marie", "O'Brien") but not a possessive 's, and a full stop
# (titles such as "Dr." keep theirs).
_TOKEN_RE = re.compile(rf"[{_LATIN}]+(?:-[{_LATIN}]+|'(?![sS](?![{_LATIN}]))[{_LATIN}]+)*\.?")


def _words(*lines: str) -> frozenset[str]:
    return frozenset(w for line in lines for w in line.split())


_NOT_NAMES = _words(
    "the a an this that these those it its he she they we i you his her their our my your",
    "there here in on at by for from to of with without about after before during since",
    "until when while if as and but or so yet also then now today tomorrow yesterday last",
    "next every each some both all no not according once later earlier recently currently",
    "usually often sometimes always never meanwhile however user assistant ai ok okay yes",
    "january february march april may june july august september october november december",
    "monday tuesday wednesday thursday friday saturday sunday",
)
#: Words that start subjectless facts ("Works night shifts.", "Allergic to nuts."): not
#: names, and not skipped either, so such a fact names nobody.
_NOT_NAME_STARTS = _words(
    "works worked likes liked loves loved lives lived prefers preferred has had have is was",
    "are were enjoys enjoyed plans planned wants wanted needs needed moves moved starts",
    "started plays played studies studied teaches taught owns owned drinks drank eats ate",
    "uses used speaks spoke knows knew visits visited goes went will would should could can",
    "might must does did hates hated runs ran reads writes wrote watches watched cooks cooked",
    "travels traveled travelled joins joined finishes finished recommends recommended",
    "suggests suggested asks asked tells told says said thinks thought feels felt believes",
    "believed wishes wished hopes hoped gets got buys bought makes made takes took gives gave",
    "learns learned learnt practises practised practices practiced attends attended drives",
    "drove grows grew keeps kept meets met mentions mentioned receives received sends sent",
    "stops stopped quits quit lost won wins finds found decides decided becomes became",
    "remains remained stays stayed spends spent sees saw shares shared books booked adopts",
    "adopted wears wore sleeps slept swims swam walks walked climbs climbed sings sang",
    "allergic vegetarian vegan interested married born based single divorced retired engaged",
    "pregnant afraid planning trying looking working living studying learning",
)
_SURNAMES = (
    "王李张刘陈杨黄赵吴徐孙朱胡郭林罗郑梁宋唐韩冯邓曹彭萧肖潘袁蔡蒋魏吕沈姚卢姜崔谭汪廖"
    "贾韦邹孟熊秦邱尹薛闫侯郝龚邵钱覃戴莫欧"
)
_ZH_TITLED_RE = re.compile(
    rf"^[{_SURNAMES}][^\W\d_是在的说会要和跟也有]{{0,2}}?(?:{'|'.join(ZH_TITLES)})"
)
_ZH_GIVEN_RE = re.compile(
    rf"^[老小阿]?[{_SURNAMES}][\u4e00-\u9fff]{{1,2}}?(?=是|在|的|说|会|要|和|跟|也|刚|已|去|住|喜欢|有|想|打算)"
)


#: Words skipped before a name: sentence starters and times ("In May", "Last week").
_SKIPPED = _NOT_NAMES | _words(
    "week weeks month months year years night morning evening afternoon weekend ago"
)


def _capitalised(token: str) -> bool:
    word = token.rstrip(".")
    # A contraction goes by its first word: "I'm", "It's" and "They'd" name nobody.
    folded = word.casefold().split("'")[0]
    return (
        word[:1].isupper()
        and not word.isupper()
        and folded not in _NOT_NAMES
        and folded not in _NOT_NAME_STARTS
    )


def other_name(text: str) -> str | None:
    """A person's name in normalised ``text`` (heuristic; see the module docstring)."""
    stripped = text.lstrip(_OPENERS + " ")
    for pattern in (_ZH_GIVEN_RE, _ZH_TITLED_RE):
        m = pattern.match(stripped)
        if m:
            return m.group(0)
    tokens = [
        m
        for m in _TOKEN_RE.finditer(text)
        if boundary_before(text, m.start()) and boundary_after(text, m.end())
    ]
    # The name must be the first word that is not a sentence starter ("In", "Yesterday",
    # "Last week"): "It may rain in Berlin" names nobody.
    i = 0
    while i < len(tokens) and tokens[i].group(0).rstrip(".").casefold() in _SKIPPED:
        i += 1
    if i == len(tokens):
        return None
    word = tokens[i].group(0)
    titled = word.rstrip(".").casefold() in _TITLE_GROUP
    if not titled and not _capitalised(word):
        return None
    parts = [word]
    end = tokens[i].end()
    for nxt in tokens[i + 1 :]:
        if text[end : nxt.start()] != " " or not _capitalised(nxt.group(0)):
            break
        parts.append(nxt.group(0))
        end = nxt.end()
    if titled and len(parts) == 1:
        return None  # a title alone ("Dr.") names nobody
    parts[-1] = parts[-1].rstrip(".")
    return " ".join(parts)

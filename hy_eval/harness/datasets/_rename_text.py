"""Where a speaker's name stands in a case's text, for the ``rename`` perturbation
(``_perturb.rename``): a name is replaced only where it is that name, never inside a word
or where the same letters are an ordinary word.

Latin script. A name is a whole word, in its own case, with Unicode-aware bounds: the
boundary rule that finds names in facts (A8; ``boundary_before`` and ``boundary_after`` of
``hy_eval.memory._names``). No letter (accented ones too), digit or combining mark of a
script written with spaces may touch the name, and a hyphen or apostrophe between letters
joins two words, so "Ana" is not in "Anaïs", "Jo" not in "Jo2" nor in "Jo-Ann"; "Ana's"
(possessive), "(Ana)" and "Ana是" (Chinese text after it) are the name.

Names that are also English words (May, Will, Hope, Grace, ...; ``COMMON_WORD_NAMES``).
Lower case is the word ("it may rain", "I will"): English writes a name capitalised, so
only the capitalised form is a candidate. A capitalised occurrence is the name except
where English capitalises the word as well, told apart by its neighbours:

- at the start of a sentence, followed straight by a pronoun or determiner, it is the verb
  of a question or a wish: "May I?", "Will you come?", "Hope you are well". A name that
  starts a sentence is followed by its verb or a comma ("May, are you coming?", "Will is
  my flatmate"), not by a pronoun;
- a month (May, June, April, August) after a time word or before a day number is the
  month: "in May", "since June", "last April", "May 5th".

A rule that kept every sentence-initial occurrence would leave "May is a nurse." naming a
speaker who no longer exists; one that took every capitalised occurrence turns "May I?"
into "Grace I?". What these cues cannot tell ("Summer is my favourite season" beside a
speaker Summer) is taken as the name.

Chinese. A speaker's full name (the name field) of two or more characters is replaced
wherever it stands: it is listed by the dataset, and the segmenter treats names as words
of their own. Any other form (an alias, such as a given name used alone, or a name of one
character) is replaced only where it is a word, or a run of whole words, of the text as
the segmenter (``_segment``: jieba with the speakers' names cut out first) splits it: 明
for 李明 stays in 明天 and 明白.

Longer names. A form is not replaced inside a longer name or word that stays as it is:
any form of one of the case's full names ("Idris" inside the speaker "Idris Bello", the
subject word 用户 inside the speaker "用户9527"), and any word the caller keeps (用户 inside
用户研究, a fact's keyword). Where the longer name is replaced as well, it wins as the
longer form at the same place.

Other forms. The subject reader knows a name by more forms than the dataset lists
(``name_forms``: "Prof. Lind" and "Lind" for "Professor Lind", 冯 for "Professor 冯", read
in 冯教授). ``with_name_forms`` renames those too, or a fact that names a speaker by one
would read, once renamed, as someone who is not a speaker.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from hy_eval.conversation import is_cjk
from hy_eval.harness.text import is_word
from hy_eval.memory._names import boundary_after, boundary_before, is_word_char, name_forms

#: English given names that are also ordinary words (lower case), the bank's and others
#: seen in datasets. Only these get the sentence-start and month rules of the docstring.
COMMON_WORD_NAMES = frozenset({
    "may", "will", "hope", "grace", "rose", "summer", "june", "april", "august", "mark",
    "bill", "sue", "pat", "jack", "frank", "joy", "faith", "drew", "chase", "miles", "sky",
    "dawn", "ray", "rich", "hunter", "penny", "ruby", "holly", "iris", "lily", "ivy",
    "daisy", "amber", "robin", "art", "bob", "max", "sunny",
})  # fmt: skip
_MONTHS = frozenset({"may", "june", "april", "august"})

#: A pronoun or determiner straight after the word: "May I", "Will you", "Hope it".
_PRONOUN_AFTER_RE = re.compile(
    r"\s+(?:I|you|he|she|it|we|they|one|there|this|that|the|a|an|my|your|his|her|our|"
    r"their|its|anyone|anybody|someone|somebody|everyone|everybody|not)\b",
    re.IGNORECASE,
)
#: A time word right before a month name: "in May", "since June", "early April".
_TIME_BEFORE_RE = re.compile(
    r"\b(?:in|since|until|till|by|from|through|during|early|late|mid|last|next|this|every|"
    r"of|end|each)[\s-]+$",
    re.IGNORECASE,
)
#: A day number right after a month name: "May 5", "June 21st".
_DAY_AFTER_RE = re.compile(r"\s*\d{1,2}(?:st|nd|rd|th)?\b")
#: What may stand between a sentence's end and its first word.
_OPENERS = " \t\"'“‘«(["
_SENTENCE_ENDS = ".!?…。！？;；:：\n\r"


def _sentence_start(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in _OPENERS:
        i -= 1
    return i < 0 or text[i] in _SENTENCE_ENDS


def _is_the_word(text: str, start: int, end: int) -> bool:
    """Whether a capitalised common-word name at ``start:end`` is the word (docstring)."""
    word = text[start:end].casefold()
    if _sentence_start(text, start) and _PRONOUN_AFTER_RE.match(text, end):
        return True
    if word in _MONTHS:
        before = text[max(0, start - 12) : start]
        return bool(_TIME_BEFORE_RE.search(before) or _DAY_AFTER_RE.match(text, end))
    return False


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` has word bounds where it needs them: a letter or digit
    of a spaced script at an edge needs one on that side; a Han character, a full stop
    ("Dr.") or a bracket does not."""
    if is_word_char(text[start]) and not boundary_before(text, start):
        return False
    return not (is_word_char(text[end - 1]) and not boundary_after(text, end))


def is_name_at(text: str, start: int, end: int, full_names: tuple[str, ...]) -> bool:
    """Whether the form at ``text[start:end]`` stands there as the name (docstring)."""
    form = text[start:end]
    if not _bounded(text, start, end):
        return False
    if form.casefold() in COMMON_WORD_NAMES and _is_the_word(text, start, end):
        return False
    if any(is_cjk(ch) for ch in form) and (form not in full_names or len(form) == 1):
        # Names of two or more characters are cut out as words before segmenting; a
        # one-character name would cut every such character out of its words.
        return is_word(text, (start, end), tuple(n for n in full_names if len(n) > 1))
    return True


def word_occurs(text: str, word: str) -> bool:
    """Whether ``word`` stands in ``text`` as a whole word, in its own case."""
    return any(
        boundary_before(text, m.start()) and boundary_after(text, m.end())
        for m in re.finditer(re.escape(word), text)
    )


def with_name_forms(mapping: dict[str, str], shared: Collection[str]) -> dict[str, str]:
    """``mapping`` (each old name or alias -> its new one) and every other form the
    subject reader knows an old one by (``name_forms``: another spelling of a title, the
    name without its title, such as 冯 in 冯教授 for "Professor 冯"), mapped to the new
    one's form without its title, or to the new one itself where it has none (周医生).
    Forms in ``shared`` (two speakers') and forms mapped already are left as they are."""
    out = dict(mapping)
    for old, new in mapping.items():
        old_forms, new_forms = name_forms(old), name_forms(new)
        for form in old_forms:
            if form in out or form in shared:
                continue
            bare = form == old_forms[-1] and len(new_forms) > 1
            out[form] = new_forms[-1] if bare else new
    return out


def _kept_spans(
    text: str, mapping: dict[str, str], full_names: tuple[str, ...], keep: Collection[str]
) -> list[tuple[int, int, str]]:
    """(start, end, itself) of each form of a full name, and each word of ``keep``, that
    stands in ``text`` and is not replaced (the docstring's "Longer names")."""
    forms = {f for name in full_names for f in name_forms(name)} | set(keep)
    out: list[tuple[int, int, str]] = []
    for form in sorted(forms - mapping.keys()):
        if not form:
            continue
        out += [
            (m.start(), m.end(), form)
            for m in re.finditer(re.escape(form), text)
            if _bounded(text, m.start(), m.end())
        ]
    return out


def replace_names(
    text: str, mapping: dict[str, str], full_names: Collection[str], keep: Collection[str] = ()
) -> str:
    """``text`` with every form of ``mapping`` replaced where it stands as the name; a
    longer form wins over a shorter one at the same place ("Dr. Ada Brooks" before "Ada"),
    and a form inside a longer name or ``keep`` word that is not replaced stays ("Idris" in
    "Idris Bello", 用户 in 用户9527 or 用户研究: the module docstring's "Longer names")."""
    names = tuple(sorted(full_names))
    found: list[tuple[int, int, str]] = []
    for form, new in mapping.items():
        if not form:
            continue
        for m in re.finditer(re.escape(form), text):
            if is_name_at(text, m.start(), m.end(), names):
                found.append((m.start(), m.end(), new))
    if not found:
        return text
    found += _kept_spans(text, mapping, names, keep)
    out: list[str] = []
    at = 0
    # Earliest first, and of those the longest.
    for start, end, new in sorted(found, key=lambda s: (s[0], s[0] - s[1])):
        if start < at:
            continue  # inside a longer form already taken
        out += [text[at:start], new]
        at = end
    out.append(text[at:])
    return "".join(out)

"""The other inflections of an English word, irregular ones included (sold -> sell,
selling; ran -> run; children -> child; mice -> mouse), from lemminflect's tables.

The strict matcher finds a Latin keyword with a regular ending (run, runs, running) on
its own; an irregular form shares no prefix with its keyword, so a keyword "sold" would
miss "has been selling" and "ran" would miss "has run". Only verbs and nouns are read:
an adjective's or adverb's other forms (better, best) name another degree, not the
same fact.
"""

from __future__ import annotations

from functools import lru_cache

_PARTS = ("VERB", "NOUN")


@lru_cache(maxsize=8192)
def inflections(word: str) -> frozenset[str]:
    """Every inflection of every verb or noun lemma of ``word`` (lower case), the word
    itself left out; none for a word lemminflect does not know or a phrase."""
    if not word.isascii() or not word.isalpha():
        return frozenset()
    from lemminflect import getAllInflections, getAllLemmas

    out: set[str] = set()
    lemmas = getAllLemmas(word)
    for part in _PARTS:
        for lemma in lemmas.get(part, ()):
            out.add(lemma)
            for forms in getAllInflections(lemma, upos=part).values():
                out.update(forms)
    return frozenset(f.lower() for f in out) - {word}

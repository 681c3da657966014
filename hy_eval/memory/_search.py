"""What ``MemoryStore.search`` looks for in a query: the full-text index's terms
(``search_terms``: Latin words and Chinese trigrams) and the short words the trigram index
cannot find, matched as substrings (``short_words``: two-character Chinese words, jieba's
two-character nouns inside longer runs, tokens mixing letters and digits)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from hy_eval._jieba import pos_tagger

_STOPWORDS = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "are",
        "was",
        "were",
        "has",
        "have",
        "his",
        "her",
        "its",
        "they",
        "their",
        "them",
        "user",
        "user's",
        "about",
        "into",
        "also",
        "been",
        "not",
        "but",
        "who",
        "what",
        "when",
        "where",
        "which",
    }
)


def search_terms(query: str) -> list[str]:
    """FTS terms for a query: Latin words of 3+ letters (minus a few stopwords), also when
    written straight against Chinese ("用户的Kindle"), and every 3-character window of each
    run of Han characters (the trigram tokenizer's unit)."""
    terms: list[str] = []
    for word in re.findall(r"[A-Za-z\u00c0-\u024f]{3,}", query):
        w = word.lower()
        if w not in _STOPWORDS and w not in terms:
            terms.append(w)
    for run in re.findall(r"[\u3400-\u9fff\uf900-\ufaff]+", query):
        grams = [run[i : i + 3] for i in range(len(run) - 2)] if len(run) >= 3 else []
        for g in grams:
            if g not in terms:
                terms.append(g)
    return terms


#: Part-of-speech tags (jieba's) of the two-character words searched inside longer
#: Chinese runs: nouns, names of people, places and organisations, other proper nouns,
#: verbal nouns, Latin words. Verbs, adverbs and function words would find everything.
_NOUN_TAGS = frozenset({"n", "nr", "nrt", "ns", "nt", "nz", "nw", "vn", "eng"})
#: The speakers' placeholders are in nearly every memory: no search word.
_NO_SEARCH_WORDS = frozenset({"用户", "助手"})


@lru_cache(maxsize=1)
def _pos_cutter() -> Any:
    import jieba

    return pos_tagger(jieba.Tokenizer())


def _nouns_inside(run: str) -> list[str]:
    """The two-character nouns jieba finds inside a Chinese run of three or more
    characters (日语 in 用户日语, 瑜伽 in 周三练瑜伽): the trigram index misses a
    two-character word unless its neighbours match too."""
    return [
        pair.word
        for pair in _pos_cutter().cut(run, HMM=False)
        if len(pair.word) == 2 and pair.flag in _NOUN_TAGS and pair.word not in _NO_SEARCH_WORDS
    ]


def short_words(query: str) -> list[str]:
    """Words the trigram index cannot find, searched as substrings: two-character Chinese
    runs, two-character nouns inside longer runs, and tokens that mix letters and digits
    (N2, B12, 6D), also against Chinese ("日语N2")."""
    out: list[str] = []
    for run in re.findall(r"[\u3400-\u9fff\uf900-\ufaff]+", query):
        for word in [run] if len(run) == 2 else _nouns_inside(run) if len(run) > 2 else []:
            if word not in out:
                out.append(word)
    for tok in re.findall(r"(?<![A-Za-z0-9])[A-Za-z0-9]{2,}(?![A-Za-z0-9])", query):
        mixed = re.search(r"[A-Za-z]", tok) and re.search(r"[0-9]", tok)
        if mixed and tok not in out:
            out.append(tok)
    return out

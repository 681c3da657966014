"""Word tools shared by the datasets and the matchers: Latin words and their folding,
Chinese segmentation (jieba), negation words, English inflections (lemminflect), and
tables derived from data files kept on disk between processes (``cached_table``)."""

from hy_eval.harness.text._inflect import inflections
from hy_eval.harness.text._segment import inside_a_word, is_word, jieba_tokenizer, segments, words
from hy_eval.harness.text._tables import cached_table
from hy_eval.harness.text._words import (
    HAN,
    NEGATIONS,
    STOP_WORDS,
    features,
    fold,
    is_negated,
    latin_words,
    split_words,
    word_form,
    word_set,
)

__all__ = [
    "HAN",
    "NEGATIONS",
    "STOP_WORDS",
    "cached_table",
    "features",
    "fold",
    "inflections",
    "inside_a_word",
    "is_negated",
    "is_word",
    "jieba_tokenizer",
    "latin_words",
    "segments",
    "split_words",
    "word_form",
    "word_set",
    "words",
]

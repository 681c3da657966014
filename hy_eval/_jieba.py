"""jieba's part-of-speech tagger over a tokenizer of our own, without reading its tag
table again.

``import jieba.posseg`` builds the module's default tagger, which reads the tag of every
word of jieba's dictionary (349,000 lines, about 0.3 s); ``POSTokenizer(tokenizer)``
reads the same file once more for each new tagger. Our taggers cut with a tokenizer of
their own (the memory search's, the strict matcher's) over that same default dictionary
and never add words, so they share the default tagger's table.
"""

from __future__ import annotations

import logging
from typing import Any


def pos_tagger(tokenizer: Any) -> Any:
    """A ``jieba.posseg.POSTokenizer`` that cuts with ``tokenizer`` and tags with the
    default tagger's table (read when ``jieba.posseg`` is first imported)."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)  # its dictionary load logs to stderr
    if tokenizer.dictionary != jieba.posseg.dt.tokenizer.dictionary:
        return jieba.posseg.POSTokenizer(tokenizer)  # another dictionary: its own tags
    tagger = jieba.posseg.POSTokenizer.__new__(jieba.posseg.POSTokenizer)
    tagger.tokenizer = tokenizer
    tagger.word_tag_tab = jieba.posseg.dt.word_tag_tab
    return tagger

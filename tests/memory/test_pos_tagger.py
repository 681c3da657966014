"""``pos_tagger`` shares jieba's default tag table instead of reading it again; it must
tag exactly as a tagger that read the table itself."""

import jieba
import jieba.posseg

from hy_eval._jieba import pos_tagger

TEXTS = (
    "用户在北京大学读书，周三练瑜伽",
    "王伟和李娜去上海出差，住在希尔顿酒店",
    "我用Python和Stripe的API写了一个日语N2学习工具",
)


def test_tags_as_a_tagger_with_its_own_table() -> None:
    shared = pos_tagger(jieba.Tokenizer())
    own = jieba.posseg.POSTokenizer(jieba.Tokenizer())
    assert shared.word_tag_tab is jieba.posseg.dt.word_tag_tab  # not read again
    assert shared.word_tag_tab == own.word_tag_tab
    for text in TEXTS:
        for hmm in (False, True):
            assert [tuple(p) for p in shared.cut(text, HMM=hmm)] == [
                tuple(p) for p in own.cut(text, HMM=hmm)
            ]


def test_another_dictionary_reads_its_own_tags(tmp_path) -> None:
    words = tmp_path / "dict.txt"
    words.write_text("瑜伽 10 nz\n北京 10 ns\n", encoding="utf-8")
    tagger = pos_tagger(jieba.Tokenizer(str(words)))
    assert tagger.word_tag_tab == {"瑜伽": "nz", "北京": "ns"}

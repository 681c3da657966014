"""Values a near miss swaps (docs/metrics.md, "Matchers"): the ``strict`` matcher reads
them to refuse a prediction that keeps a fact's words but replaces its main value.

- **Named values**: Latin words written with a capital inside a sentence (Padella,
  Porto, ICML) and the Chinese places, organisations and other proper names the
  segmenter's part-of-speech tags mark (丽江, 招商银行). A prediction that lacks one of the
  gold's named values while naming one the gold does not has replaced it (Padella ->
  Dishoom; 大理 -> 丽江).
- **Contrast classes**: small closed sets whose members exclude each other: weekdays,
  months, seasons, parts of the day, days, weeks, months and years counted from now
  (this month / next month), kin, and pairs of roles (teaches / studies or takes
  classes, runs / works at, sells / buys / borrows / rents, lends / borrows). A gold
  fact with a member of one class and a prediction with another member of the same
  class but not the gold's is a near miss. An in-law word that names the parent the gold
  gives a named person (用户的婆婆 for 老陈的母亲) is the same person said from the
  spouse's side (``in_law_named``); the same in-law word of that person (老陈的婆婆) is
  still another one.
- A possessive names its owner: Klarna's is the named value Klarna.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from hy_eval._jieba import pos_tagger
from hy_eval.harness.scoring._bilingual import same_word
from hy_eval.harness.text import fold, jieba_tokenizer, segments, word_set

#: Chinese part-of-speech tags of proper names: places, transliterated names,
#: organisations, other proper nouns.
_ZH_PROPER_TAGS = frozenset({"ns", "nrt", "nt", "nz"})
#: Capitalised words that name no value.
_NOT_NAMES = word_set("i the a an user assistant mr mrs ms dr coach uncle aunt")

#: Days, weeks, months and years counted from now.
_RELATIVE_TIMES = (
    "today 今天 | tomorrow 明天 | yesterday 昨天",
    "这周 本周 这个星期 | 下周 下个星期 下星期 | 上周 上个星期 上星期",
    "这个月 本月 | 下个月 下月 | 上个月 上月",
    "今年 | 明年 | 去年",
)

# fmt: off
_CONTRASTS: tuple[tuple[frozenset[str], ...], ...] = tuple(
    tuple(word_set(group) for group in classes.split("|"))
    for classes in (
        "monday mondays 周一 星期一 礼拜一 | tuesday tuesdays 周二 星期二 礼拜二 |"
        " wednesday wednesdays 周三 星期三 礼拜三 | thursday thursdays 周四 星期四 礼拜四 |"
        " friday fridays 周五 星期五 礼拜五 | saturday saturdays 周六 星期六 礼拜六 每周六 |"
        " sunday sundays 周日 周天 星期日 星期天 礼拜天 每周日",
        "january jan 1月 | february feb 2月 | march 3月 | april apr 4月 | may 5月 | june 6月 |"
        " july 7月 | august aug 8月 | september sept sep 9月 | october oct 10月 |"
        " november nov 11月 | december dec 12月",
        "spring 春天 春季 | summer 夏天 夏季 暑假 | autumn fall 秋天 秋季 | winter 冬天 冬季 寒假",
        "morning mornings 早上 上午 早晨 清晨 | afternoon afternoons 下午 |"
        " evening evenings night nights 晚上 夜里 夜班 傍晚 | noon lunchtime 中午",
        "christmas 圣诞 圣诞节 | easter 复活节 | 春节 过年 | 国庆 国庆节 | 五一 劳动节 |"
        " 中秋 中秋节",
        "mother mum mom mama 妈妈 母亲 | father dad papa 爸爸 父亲 | son sons 儿子 |"
        " daughter daughters 女儿 闺女 | brother brothers 哥哥 弟弟 | sister sisters 姐姐 妹妹 |"
        " husband 丈夫 老公 先生 | wife 妻子 老婆 太太 | boyfriend 男朋友 男友 |"
        " girlfriend 女朋友 女友 | friend friends 朋友 | colleague colleagues coworker 同事 |"
        " boss manager 领导 老板 上司 | neighbour neighbor neighbours neighbors 邻居 |"
        " roommate flatmate housemate 室友 舍友 | grandmother grandma gran nan 外婆 奶奶 姥姥 |"
        " grandfather grandpa granddad 爷爷 外公 姥爷 | grandson granddaughter 孙子 孙女 外孙 |"
        " aunt 姑姑 阿姨 姨妈 舅妈 | uncle 叔叔 舅舅 伯伯 | cousin cousins 表哥 表姐 堂哥 堂姐 |"
        " niece nephew 侄子 侄女 外甥 外甥女 | father-in-law mother-in-law 公公 婆婆 岳父 岳母",
        "teach teaches teaching taught teacher 教 教课 授课 |"
        " study studies studying studied learn learns learning student attend attends 学 上课"
        " 报班 take takes taking took 听课",
        "sell sells selling sold 卖 卖掉 出售 转卖 |"
        " buy buys buying bought purchase purchased 买 买下 入手 |"
        " borrow borrows borrowing borrowed 借 借来 | rent rents renting rented 租 租了 租来",
        "lend lends lending lent 借给 | borrow borrows borrowing borrowed 借来 借了",
        "runs owns manages founded 开了 经营 | works 上班 打工",
        "pass passed passes 通过 考过 考上 | fail failed fails 挂科 没过 没考过 落榜",
        "became become becomes started starts 开始 | gave quit stopped stops 放弃 戒掉 不再",
        "stop stopped 停 停了 停药 | continue continues continued keep keeps 继续",
        "selling sell sells sold cleared clear clears 卖出 抛 清仓 |"
        " holding hold holds keep keeping still 持有 留着",
        *_RELATIVE_TIMES,
        "arm arms 胳膊 手臂 | neck 脖子 | leg legs 腿 | face 脸 | back 背 后背 | hand hands 手",
    )
)
# fmt: on
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_POSSESSIVE = re.compile(r"['’]s?$")
_SENTENCE_START = re.compile(r"(?:^|[.!?。！？]\s*)([A-Za-z][A-Za-z'’-]*)")


@lru_cache(maxsize=1)
def _pos_tokenizer() -> Any:
    return pos_tagger(jieba_tokenizer())


@lru_cache(maxsize=65536)
def named_values(text: str, names: tuple[str, ...]) -> frozenset[str]:
    """The named values of ``text`` (module docstring), folded; speakers' names are none."""
    skip = {fold(n) for n in names} | {fold(w) for n in names for w in n.split()}
    starts = {m.start(1) for m in _SENTENCE_START.finditer(text)}
    # A possessive names its owner: Klarna's is the value Klarna.
    out = {
        _POSSESSIVE.sub("", fold(m.group(0)))
        for m in _LATIN_WORD.finditer(text)
        if m.group(0)[0].isupper() and m.start() not in starts
    }
    for piece in re.split("|".join(map(re.escape, names)) or "$^", text) if names else [text]:
        for pair in _pos_tokenizer().cut(piece, HMM=False):
            if pair.flag in _ZH_PROPER_TAGS and len(pair.word) > 1:
                out.add(fold(pair.word))
    return frozenset(v for v in out if v not in skip and v not in _NOT_NAMES)


def replaced_value(gold: str, predicted: str, names: tuple[str, ...]) -> str | None:
    """Why ``predicted`` states another value than ``gold``, or None (module docstring)."""
    g_text, p_text = fold(gold), fold(predicted)
    missing = [v for v in named_values(gold, names) if v not in p_text]
    extra = [v for v in named_values(predicted, names) if v not in g_text]
    # The same name said otherwise (北大 / 北京大学) replaces nothing.
    missing = [v for v in missing if not any(same_word(v, e) for e in extra)]
    if missing and extra:
        return f"another named value ({extra[0]} for {missing[0]})"
    g_words, p_words = _class_words(g_text), _class_words(p_text)
    spouse_parent = in_law_named(g_text, p_text, names)
    for classes in _CONTRASTS:
        g_hit = [i for i, group in enumerate(classes) if group & g_words]
        p_hit = [i for i, group in enumerate(classes) if group & p_words - spouse_parent]
        if g_hit and p_hit and not set(g_hit) & set(p_hit):
            return "another value of the same kind (day, time, kin or role)"
    return None


#: A parent of someone named and the in-law word that names the same person from their
#: spouse's side: 老陈的母亲 is 用户的婆婆 when the user is 老陈's wife.
_IN_LAWS = (
    (word_set("mother mum mom 妈妈 母亲 老妈"), word_set("mother-in-law 婆婆 岳母 丈母娘")),
    (word_set("father dad 爸爸 父亲 老爸"), word_set("father-in-law 公公 岳父 丈人 老丈人")),
)


def in_law_named(gold: str, predicted: str, names: tuple[str, ...]) -> frozenset[str]:
    """The in-law words of the folded ``predicted`` that may name the parent the folded
    ``gold`` gives a named person (老陈的母亲, Chen's mother): the prediction says it
    from the spouse's side (用户的婆婆), not of that same person (老陈的婆婆 is
    another woman)."""
    out: set[str] = set()
    for name in (fold(n) for n in names if n):
        for parents, in_laws in _IN_LAWS:
            said = any(f"{name}{link}{w}" in gold for w in parents for link in ("的", "'s ", "’s "))
            if not said:
                continue
            for w in in_laws:
                own = any(f"{name}{link}{w}" in predicted for link in ("的", "'s ", "’s ", ""))
                if w in predicted and not own:
                    out.add(w)
    return frozenset(out)


def kin_groups() -> tuple[frozenset[str], ...]:
    """The kin and acquaintance groups of the contrast classes (mother, 妈妈 ...)."""
    return next(classes for classes in _CONTRASTS if any("mother" in g for g in classes))


@lru_cache(maxsize=1)
def _group_keys() -> dict[str, str]:
    """Each contrast-class word and the first word of its group: one key per value."""
    return {word: sorted(group)[0] for classes in _CONTRASTS for group in classes for word in group}


def value_key(word: str) -> str:
    """The form a content word is compared in by value: the key of its contrast group
    (dad and father are one value), else the word itself."""
    return _group_keys().get(word, word)


#: Chinese time words counted from now, found in the text as written: the segmenter cuts
#: some of them (这个|月).
_ZH_RELATIVE_TIMES = frozenset(w for c in _RELATIVE_TIMES for w in c.split() if not w.isascii())


@lru_cache(maxsize=65536)
def _class_words(folded: str) -> frozenset[str]:
    """The words of a folded text that contrast classes compare: Latin words, the
    Chinese words of the segmenter with their dictionary sub-words, and the Chinese
    time words counted from now wherever they occur."""
    out = set(re.findall(r"[a-z][a-z'’-]*", folded))
    out.update(folded[a:b] for a, b in segments(folded)[1])
    out.update(w for w in _ZH_RELATIVE_TIMES if w in folded)
    return frozenset(out)

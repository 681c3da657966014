"""The cues the ``strict`` matcher reads in a fact sentence, in English and Chinese
(docs/metrics.md, "Matchers"): negation, plan or done, and a question or request.

A denied failure ("without missing a payment", "never missed one") is no negation of
the fact: it is read apart and refused only against a failure stated ("missed a
payment"). The end of a habit ("quit drinking", "stopped smoking") agrees with "no
longer drinks", though it negates nothing. A question word before 都 or 也 (哪儿都去不了)
asks nothing.

Each cue is read from the words: Latin words as ``_words.latin_words`` gives them,
Chinese through the segmenter (``_segment.words``), so 不 in 不错 ("not bad") or 没 in
没关系 is no negation, and 要 in 需要 no plan. The lists are short on purpose; what they
miss costs a matcher only the check, never a false acceptance on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hy_eval.harness.text import latin_words, word_set

_EN_NEGATIONS = word_set("not no never nobody nothing none cannot neither nor without")
_ZH_NEGATIONS = word_set(
    """不 没 没有 未 别 无 非 莫 勿 甭 不再 从不 从没 从未 并不 并非 尚未 未曾 无法 没法 绝不
    决不 毫无 再也不 不是 不会 不能 不要 不想 不用 不必 不太 不肯 不愿 不敢 不爱 不吃 不喝 不去"""
)
#: Words that start with 不/没/未 and negate nothing: "not bad", "but", "many", ...
_ZH_NOT_NEGATIONS = word_set(
    """不错 不过 不少 不同 不仅 不断 不久 不然 不管 不如 不好意思 不得不 不但 不光 不止 不只
    不料 不禁 不妨 不时 不满 不安 不足 没关系 没事 没错 未来 未必 未免 不一定 差不多 了不起
    对不起 说不定 要不 要不然 不耐受 不得了 不得已 未婚 未婚妻 未婚夫 未成年 不良 发育不良
    消化不良 营养不良"""
)

_FAILURES = r"(?:miss|skip|fail|default)(?:es|s|ed|ing|ped|ping)?"
#: A failure denied: "without missing a payment", "never once missed", "hasn't missed".
_EN_KEPT = re.compile(
    rf"(?:\b(?:without|never|not|no)|n['’]t)\s+(?:(?:once|ever|even|a|any|single)\s+)*"
    rf"{_FAILURES}\b"
)
#: A failure stated ("missed a payment", "skipped a session").
_EN_FAILED = re.compile(rf"\b{_FAILURES}\b")
#: The end of a habit, a "no longer": "quit drinking", "stopped smoking", "gave up running".
_EN_CEASED = re.compile(
    r"\b(?:quit|quits|quitting|stopped|stops|stop|gave up|given up|gives up|give up)\s+"
    r"[a-z]+ing\b"
)

_EN_PLAN_WORDS = word_set(
    """will 'll ’ll gonna plan plans planning intend intends intending intention hope hopes
    hoping tomorrow upcoming soon considering aims aiming scheduled expects expecting
    wants"""
)
_EN_PLAN_PHRASES = re.compile(
    # "is joining", "are moving": the progressive of a coming or ongoing thing
    r"\b(?:(?:is|are|am) (?:\w+ly )?(?!being\b)[a-z]{2,}ing\b|"
    r"going to|want to|wants to|would like|'d like|’d like|thinking (?:about|of)|"
    r"about to|looking to|needs? to|hoping to|has yet to|have yet to|"
    r"next (?:week|month|year|weekend|time|spring|summer|autumn|fall|"
    r"winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|later this)\b"
)
_EN_DONE_WORDS = word_set(
    """already finished completed yesterday ago recently did went ran bought sold took got
    made saw met gave left came began won lost quit moved started passed graduated
    returned visited tried"""
)
_EN_DONE_PHRASES = re.compile(
    r"\b(?:last (?:week|month|year|night|weekend|time|spring|summer|autumn|fall|winter|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|used to|has just|have just|"
    r"earlier this|(?:has|have|had) (?:already )?\w+(?:ed|en|wn|ne|ught|ung)\b)\b"
)
#: A regular past tense (adopted, booked), read as done only when the sentence has no
#: plan cue, and not after a verb that makes it an adjective (is interested, got married).
_EN_PAST = re.compile(
    r"(?<!\bis )(?<!\bare )(?<!\bam )(?<!\bbe )(?<!\bbeen )(?<!\bwas )(?<!\bwere )"
    r"(?<!\bget )(?<!\bgot )(?<!\bfeels )(?<!\bfeel )\b[a-z]{3,}ed\b"
)
#: 了 after a verb marks a done thing, again only when no plan cue is read.
_ZH_WEAK_DONE = frozenset({"了"})
#: A-not-A questions: 值不值得, 够不够, 愿不愿意.
_ZH_A_NOT_A = re.compile(r"([\u4e00-\u9fff])不\1")
_ZH_PLAN = word_set(
    """打算 计划 准备 想要 想 要 将 将要 即将 快要 下周 下个月 下个星期 下星期 明年 明天 后天
    以后 将来 下次 下回 考虑 争取 希望 预计 打算要 准备要 计划要"""
)
_ZH_DONE = word_set(
    """已经 已 刚 刚刚 昨天 前天 上周 上个月 上个星期 上星期 去年 前年 之前 以前 曾 曾经 过
    完成 结束 做完 跑完 办完 考完 辞职了"""
)

_EN_QUESTION_START = re.compile(
    r"^(?:should|shall|can|could|would|is|are|am|was|were|do|does|did|what|how|why|where|"
    r"when|which|who|whom|whose|please|remind)\b"
)
_EN_ASKED = re.compile(
    r"\b(?:asks?|asked|asking|wonders?|wondered|wondering|inquires?|inquired)\s+"
    r"(?:\w+\s+)?(?:whether|if|what|how|why|where|when|which|who|about)\b"
    r"|\b(?:asks?|asked|asking)\s+(?:\w+\s+){0,2}to\b"
)
_ZH_QUESTION_WORDS = word_set(
    """吗 么 是否 要不要 能不能 可不可以 有没有 是不是 会不会 什么 怎么 怎样 怎么样 如何 为什么
    为啥 哪 哪里 哪儿 哪个 哪些 多少 几点 咋"""
)
_ZH_REQUEST_START = ("请", "帮我", "麻烦", "提醒我", "记得提醒")


@dataclass(frozen=True)
class Cues:
    """What one sentence says besides its content."""

    negated: bool
    plan: bool
    done: bool
    question: bool
    #: A failure denied ("without missing a payment", "has never missed one"): no
    #: negation of the fact, which says something was always kept.
    kept: bool = False
    #: A failure stated ("missed a payment"): what ``kept`` denies.
    failed: bool = False
    #: Negated by "no longer" alone ("Tom no longer drinks").
    no_longer: bool = False
    #: The end of a habit ("quit drinking", "stopped smoking"): what "no longer" says.
    ceased: bool = False

    @property
    def tense(self) -> str | None:
        """``plan`` or ``done`` when exactly one of them is read, else None."""
        if self.plan == self.done:
            return None
        return "plan" if self.plan else "done"


def read_cues(sentence: str, zh_words: Sequence[str], whole: bool = True) -> Cues:
    """The cues of one sentence, or of clauses cut from one (``whole`` False: then a
    clause starting with "is" or "can" is no question); ``zh_words`` are its words from
    the segmenter (the Latin words are read here)."""
    latin = latin_words(sentence)
    lowered = " ".join(sentence.casefold().split())
    zh = set(zh_words)
    # A denied failure ("without missing", "never missed") is read apart, not as a
    # negation of the fact; the rest of the sentence is read for negation as before.
    kept = bool(_EN_KEPT.search(lowered))
    rest = _EN_KEPT.sub(" ", lowered) if kept else lowered
    failed = bool(_EN_FAILED.search(rest))
    # "no longer" is told apart from the other negations: the end of a habit in other
    # words ("quit drinking") agrees with it.
    without_no_longer = rest.replace("no longer", " ")
    negated = any(
        w in _EN_NEGATIONS or w.endswith(("n't", "n’t")) for w in latin_words(without_no_longer)
    )
    negated = negated or _zh_negated(sentence, zh_words)
    no_longer = not negated and "no longer" in rest
    negated = negated or no_longer
    plan = bool(zh & _ZH_PLAN) or any(w in _EN_PLAN_WORDS for w in latin)
    plan = plan or bool(_EN_PLAN_PHRASES.search(lowered))
    done = bool(zh & _ZH_DONE) or any(w in _EN_DONE_WORDS for w in latin)
    done = done or bool(_EN_DONE_PHRASES.search(lowered))
    if not plan:
        done = done or bool(zh & _ZH_WEAK_DONE) or bool(_EN_PAST.search(lowered))
    stripped = lowered.rstrip(" .。!！~～…")
    question = stripped.endswith(("?", "？")) or bool(_EN_ASKED.search(lowered))
    question = question or (whole and bool(_EN_QUESTION_START.match(lowered)))
    asking = {w for w in zh & _ZH_QUESTION_WORDS if not _indefinite(sentence, w)}
    question = question or bool(asking) or bool(_ZH_A_NOT_A.search(sentence))
    question = question or alternative_question(sentence)
    question = question or sentence.lstrip().startswith(_ZH_REQUEST_START)
    return Cues(
        negated=negated,
        plan=plan,
        done=done,
        question=question,
        kept=kept,
        failed=failed,
        no_longer=no_longer,
        ceased=bool(_EN_CEASED.search(rest)),
    )


#: A question word before 都 or 也 is an indefinite: 哪儿都去不了 "cannot go anywhere",
#: 什么都吃 "eats anything", 谁也不认识 "knows nobody".
_ZH_INDEFINITE_AFTER = ("都", "也")


def _indefinite(sentence: str, word: str) -> bool:
    """Whether every occurrence of the question word ``word`` in ``sentence`` is
    followed by 都 or 也, so it asks nothing."""
    at = sentence.find(word)
    while at >= 0:
        if not sentence.startswith(_ZH_INDEFINITE_AFTER, at + len(word)):
            return False
        at = sentence.find(word, at + 1)
    return True


def _zh_negated(sentence: str, zh_words: Sequence[str]) -> bool:
    """Whether a Chinese word negates: a negation word, or a word with 不/没/未 that is
    none of the words that negate nothing. Those are also looked for in the sentence as
    written, since the segmenter may cut one (乳糖|不|耐受 for 乳糖不耐受)."""
    masked = sentence
    for phrase in _ZH_NOT_NEGATIONS:
        masked = masked.replace(phrase, "\0" * len(phrase))
    at = 0
    for w in zh_words:
        start = sentence.find(w, at)
        if start < 0:
            start = at
        at = start + len(w)
        if masked[start : start + len(w)] != w:
            continue  # inside a phrase that negates nothing
        if w in _ZH_NEGATIONS or (any(c in w for c in "不没未") and w not in _ZH_NOT_NEGATIONS):
            return True
    return False


#: An alternative question, one question from its first clause to its question mark
#: (A还是B？).
_ZH_ALTERNATIVE = re.compile(r"还是[^。！!；;]*[？?]")


def alternative_question(sentence: str) -> bool:
    """Whether ``sentence`` asks A or B (星琼是攒着好，还是现在就抽？): a question as a
    whole, even in its clauses without a question mark."""
    return bool(_ZH_ALTERNATIVE.search(sentence))


def cue_words() -> frozenset[str]:
    """Words that only carry a cue (will, plan, 打算, 已经, 不 ...): no content of their
    own, since the cues compare them. Done verbs (sold, bought, 完成) stay content."""
    adverbs = word_set("already yesterday ago recently")
    zh_done = _ZH_DONE - word_set("完成 结束 做完 跑完 办完 考完 辞职了")
    return _EN_PLAN_WORDS | adverbs | _ZH_PLAN | zh_done | _ZH_NEGATIONS | _EN_NEGATIONS


def _ended(a: Cues, b: Cues) -> bool:
    """Whether one side says "no longer" and the other ends the habit in other words
    ("Tom no longer drinks" / "Tom quit drinking"): one statement, not a negation on one
    side. Against a plain statement ("Tom drinks") the end of a habit is refused by
    the direction of change (``_frames``: "quit" leaves what the gold names)."""
    return (a.no_longer and b.ceased) or (b.no_longer and a.ceased)


def conflict(gold: Cues, predicted: Cues) -> str | None:
    """Why the predicted sentence cannot state the gold fact, by its cues, or None."""
    if predicted.question and not gold.question:
        return "a question or request, not a statement"
    if gold.negated != predicted.negated and not _ended(gold, predicted):
        return "negation differs"
    if (gold.kept and predicted.failed) or (gold.failed and predicted.kept):
        return "negation differs (a failure denied on one side, stated on the other)"
    if gold.tense and predicted.tense and gold.tense != predicted.tense:
        return f"{gold.tense} in the gold fact, {predicted.tense} in the prediction"
    return None

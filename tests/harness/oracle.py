"""An oracle for the self-check (E3, A8): each case answered with its own gold
facts written as natural sentences in the case's language, through several templates.

Scored directly with ``score_case`` (no model, no server): a perfect answer must score
exactly 1.0 on every accuracy metric and 0.0 on every violation rate, so a case or scorer
change that misreads a perfectly attributed sentence fails the tests.
"""

from hy_eval.harness import Case, Outcome, score_case
from hy_eval.harness.datasets import gold_subject
from hy_eval.memory import same_subject, subject_of

SUBJECT_WORDS = {
    "en": {"user": "The user", "assistant": "The assistant"},
    "zh": {"user": "用户", "assistant": "助手"},
}

#: Sentence templates per language: (name, function of subject and keywords). The
#: subject first, possessive, after a clause, in quotes or brackets, and (zh) a Latin
#: name written straight before Chinese text.
TEMPLATES = {
    "en": {
        "plain": lambda s, k: f"{s} mentioned {' and '.join(k)}.",
        "after_clause": lambda s, k: f"In this conversation, {s} talked about {' and '.join(k)}.",
        "possessive": lambda s, k: f"{s}'s update: {', '.join(k)}.",
        "quoted": lambda s, k: f'{s} said: "{", ".join(k)}".',
        "bracketed": lambda s, k: f"{s} (in the chat) brought up {' and '.join(k)}.",
    },
    "zh": {
        "no_space": lambda s, k: f"{s}提到了{'、'.join(k)}。",
        "space": lambda s, k: f"{s} 说过{'、'.join(k)}。",
        "possessive": lambda s, k: f"{s}的近况：{'、'.join(k)}。",
        "after_clause": lambda s, k: f"在这段对话里，{s}提到{'、'.join(k)}。",
        "quoted": lambda s, k: f"「{s}」提到了{'、'.join(k)}。",
    },
}

#: Other spellings of a title, used by the ``alt_form`` pass.
_TITLE_SWAP = {"Dr.": "Dr", "Professor": "Prof.", "Captain": "Capt.", "Prof.": "Professor"}


def full_width(text):
    """ASCII letters and digits as their full-width forms (NFKC folds them back)."""
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in text)


def alt_form(name, case):
    """Another way the name is written: a declared alias, another spelling of its title,
    or (Latin names) full-width letters."""
    if case.aliases.get(name):
        return case.aliases[name][0]
    first, _, rest = name.partition(" ")
    if first in _TITLE_SWAP and rest:
        return f"{_TITLE_SWAP[first]} {rest}"
    return full_width(name) if name.isascii() else name


_EN_SMALL = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_EN_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ZH = "零一二三四五六七八九"


def english_number(n):
    """0-9999 in English words ("twenty-one", "three hundred and five")."""
    if n < 20:
        return _EN_SMALL[n]
    if n < 100:
        return _EN_TENS[n // 10] + ("" if n % 10 == 0 else "-" + _EN_SMALL[n % 10])
    if n < 1000:
        rest = "" if n % 100 == 0 else " and " + english_number(n % 100)
        return _EN_SMALL[n // 100] + " hundred" + rest
    rest = "" if n % 1000 == 0 else " " + english_number(n % 1000)
    return english_number(n // 1000) + " thousand" + rest


def chinese_number(n):
    """0-9999 in Chinese numerals (十二, 两 for 2 alone, 一百零五, 两千)."""
    if n == 2:
        return "两"
    if n < 10:
        return _ZH[n]
    if n < 20:
        return "十" + ("" if n == 10 else _ZH[n % 10])
    out, zero = "", False
    for unit, name in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        d = (n // unit) % 10
        if d == 0:
            zero = bool(out)
            continue
        out += ("零" if zero else "") + ("两" if d == 2 and unit >= 1000 else _ZH[d]) + name
        zero = False
    return out


def number_forms(keyword, lang):
    """The forms a whole-number keyword is written in by the oracle's passes: digits, the
    case language's words, the other language's."""
    if not (keyword.isascii() and keyword.isdigit() and int(keyword) < 10_000):
        return [keyword]
    n = int(keyword)
    words = [english_number(n), chinese_number(n)]
    return [keyword, *(words if lang == "en" else words[::-1])]


def keyword_forms(item, lang):
    """Every written form of a keyword item: each member of a group, each number form,
    whole-word keywords without their ``=``."""
    members = [item] if isinstance(item, str) else item
    out = []
    for k in members:
        for form in number_forms(k.removeprefix("="), lang):
            if form not in out:
                out.append(form)
    return out


def render_keywords(items, lang, variant=0):
    """One form per item, the ``variant``-th (cycling), so passes vary the member and the
    number form."""
    out = []
    for i, item in enumerate(items):
        forms = keyword_forms(item, lang)
        out.append(forms[(variant + i) % len(forms)])
    return out


def gold_sentence(case, gold, template, alternative=False, variant=0):
    words = SUBJECT_WORDS[case.lang]
    subject = words.get(gold.subject) or (
        alt_form(gold.subject, case) if alternative else gold.subject
    )
    return TEMPLATES[case.lang][template](
        subject, render_keywords(gold.keywords, case.lang, variant)
    )


def plan_operations(case):
    """The reconcile operations a perfect answer makes: ``[(fact, op, [memory ids])]``,
    one per fact at most. Each memory expected to change goes to the first gold fact of
    its subject (fact 0 when none has it: the self-check then reports the case), with the
    first operation every memory on that fact accepts."""
    speakers = case.speakers
    by_fact = {}
    for mid in case.expect.operations:
        allowed = case.expect.expected_ops(mid)
        if allowed == ("NONE",):
            continue
        text = next(m.text for m in case.existing if m.id == mid)
        subject = subject_of(text, speakers)
        fact = next(
            (
                g
                for g, gold in enumerate(case.expect.facts)
                if same_subject(gold_subject(gold.subject), subject)
            ),
            0,
        )
        by_fact.setdefault(fact, []).append((mid, allowed))
    plan = []
    for fact, wanted in sorted(by_fact.items()):
        common = [op for op in wanted[0][1] if all(op in a for _, a in wanted)]
        op = (common or list(wanted[0][1]))[0]
        plan.append((fact, op, [mid for mid, _ in wanted]))
    return plan


def _after(case, ids, plan, facts):
    """Every existing memory after ``plan`` is applied: text and status."""
    after = {ids[m.id]: {"text": m.text, "status": "active"} for m in case.existing}
    for fact, op, mids in plan:
        for n, mid in enumerate(mids):
            row = after[ids[mid]]
            if op == "UPDATE" and n == 0:
                row["text"] = facts[fact]["text"]
            else:
                row["status"] = {"SUPERSEDE": "superseded"}.get(op, "deleted")
    return after


def oracle_outcome(case, template, alternative=False, variant=0):
    """What a perfect pipeline would have done for ``case``, facts written by ``template``
    (``variant`` picks the group member and number form of each keyword)."""
    facts = [
        {"text": gold_sentence(case, g, template, alternative, variant), "owner": g.owner}
        for g in case.expect.facts
    ]
    ids = {m.id: i + 1 for i, m in enumerate(case.existing)}
    plan = plan_operations(case)
    changes = {fact: (op, [ids[m] for m in mids]) for fact, op, mids in plan}
    ops = [
        {"op": changes.get(i, ("ADD",))[0], "fact": i, "targets": changes.get(i, (0, []))[1]}
        | {"text": f["text"]}
        for i, f in enumerate(facts)
    ]
    profile = case.expect.profile
    return Outcome(
        facts=facts,
        raw_ops=ops,
        applied_ops=ops,
        reconcile_ran=bool(case.existing and facts),
        existing_ids=ids,
        memories_after=_after(case, ids, plan, facts),
        profile={"name": profile.name} if profile and profile.name else {},
    )


def passes(case):
    """Every (template, name form, keyword variant) pass of the oracle for one case: the
    variant runs through as many forms as the case's most varied keyword item has."""
    items = [k for g in case.expect.facts for k in g.keywords]
    variants = max([len(keyword_forms(k, case.lang)) for k in items] or [1])
    for template in TEMPLATES[case.lang]:
        for alternative in (False, True):
            for variant in range(variants):
                yield template, alternative, variant


def score_oracle(cases, passes_of=passes):
    """Summed (numerator, denominator) per metric, and the failing (case, pass) pairs."""
    totals = {}
    failures = []
    for case in cases:
        assert isinstance(case, Case)
        for template, alternative, variant in passes_of(case):
            score = score_case(case, oracle_outcome(case, template, alternative, variant))
            for metric, (num, den) in score.counts.items():
                n, d = totals.get(metric, (0, 0))
                totals[metric] = (n + num, d + den)
            if not score.passed:
                bad = [c for c in score.checks if not c["ok"]]
                failures.append((case.id, template, alternative, variant, bad))
    return totals, failures

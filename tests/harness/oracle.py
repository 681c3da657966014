"""An oracle for the self-check (issue 15, E3, A8): each case answered with its own gold
facts written as natural sentences in the case's language, through several templates.

Scored directly with ``score_case`` (no model, no server): a perfect answer must score
exactly 1.0 on every accuracy metric and 0.0 on every violation rate, so a case or scorer
change that misreads a perfectly attributed sentence fails the tests.
"""

from hy_eval.harness import Case, Outcome, score_case

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


def gold_sentence(case, gold, template, alternative=False):
    words = SUBJECT_WORDS[case.lang]
    subject = words.get(gold.subject) or (
        alt_form(gold.subject, case) if alternative else gold.subject
    )
    return TEMPLATES[case.lang][template](subject, gold.keywords)


def oracle_outcome(case, template, alternative=False):
    """What a perfect pipeline would have done for ``case``, facts written by ``template``."""
    facts = [
        {"text": gold_sentence(case, g, template, alternative), "owner": g.owner}
        for g in case.expect.facts
    ]
    ids = {m.id: i + 1 for i, m in enumerate(case.existing)}
    ops = [{"op": "ADD", "fact": i, "targets": [], "text": f["text"]} for i, f in enumerate(facts)]
    profile = case.expect.profile
    return Outcome(
        facts=facts,
        raw_ops=ops,
        applied_ops=ops,
        reconcile_ran=bool(case.existing and facts),
        existing_ids=ids,
        memories_after={ids[m.id]: {"text": m.text, "status": "active"} for m in case.existing},
        profile={"name": profile.name} if profile and profile.name else {},
    )


def passes(case):
    """Every (template, form) pass of the oracle for one case."""
    for template in TEMPLATES[case.lang]:
        for alternative in (False, True):
            yield template, alternative


def score_oracle(cases):
    """Summed (numerator, denominator) per metric, and the failing (case, pass) pairs."""
    totals = {}
    failures = []
    for case in cases:
        assert isinstance(case, Case)
        for template, alternative in passes(case):
            score = score_case(case, oracle_outcome(case, template, alternative))
            for metric, (num, den) in score.counts.items():
                n, d = totals.get(metric, (0, 0))
                totals[metric] = (n + num, d + den)
            if not score.passed:
                bad = [c for c in score.checks if not c["ok"]]
                failures.append((case.id, template, alternative, bad))
    return totals, failures

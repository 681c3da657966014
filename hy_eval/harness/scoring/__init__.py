"""Scoring one case: the matchers that pair predicted facts with gold facts (strict,
keyword, fuzzy, judge), the checks of a case, and how far a matcher is trusted."""

from hy_eval.harness.scoring._fuzzy import (
    FUZZY_THRESHOLD,
    FuzzyMatch,
    dice,
    match_fuzzy,
    max_weight_assignment,
    similarity,
)
from hy_eval.harness.scoring._goldcheck import check_suite_gold, fact_problems
from hy_eval.harness.scoring._judge import REASON_LIMIT, Judge, JudgeSettings, build_judge
from hy_eval.harness.scoring._matching import (
    MATCHERS,
    SCORED_TEXT_LIMIT,
    SCORING_DEADLINE_S,
    FuzzyMatcher,
    KeywordMatcher,
    Matcher,
    ScoringDeadline,
    StrictMatcher,
    Verdict,
    VerdictMatcher,
    bound_texts,
    matcher_info,
    matcher_text,
    static_matcher,
)
from hy_eval.harness.scoring._numbers import number_conflict
from hy_eval.harness.scoring._quality import corrected_recall, corrected_text, quality_text
from hy_eval.harness.scoring._score import (
    ACCURACY_METRICS,
    METRICS,
    SUBJECT_KINDS,
    VIOLATION_METRICS,
    CaseScore,
    Outcome,
    score_case,
)
from hy_eval.harness.scoring._strict import bounded, decide

__all__ = [
    "ACCURACY_METRICS",
    "FUZZY_THRESHOLD",
    "MATCHERS",
    "METRICS",
    "REASON_LIMIT",
    "SCORED_TEXT_LIMIT",
    "SCORING_DEADLINE_S",
    "SUBJECT_KINDS",
    "VIOLATION_METRICS",
    "CaseScore",
    "FuzzyMatch",
    "FuzzyMatcher",
    "Judge",
    "JudgeSettings",
    "KeywordMatcher",
    "Matcher",
    "Outcome",
    "ScoringDeadline",
    "StrictMatcher",
    "Verdict",
    "VerdictMatcher",
    "bound_texts",
    "bounded",
    "build_judge",
    "check_suite_gold",
    "corrected_recall",
    "corrected_text",
    "decide",
    "dice",
    "fact_problems",
    "match_fuzzy",
    "matcher_info",
    "matcher_text",
    "max_weight_assignment",
    "number_conflict",
    "quality_text",
    "score_case",
    "similarity",
    "static_matcher",
]

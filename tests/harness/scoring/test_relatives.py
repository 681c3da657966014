"""A fact moved onto a relative of its subject (hy_eval/harness/scoring/_relatives.py)."""

from __future__ import annotations

import pytest

from hy_eval.harness.scoring import decide
from hy_eval.harness.scoring._relatives import added_relative


@pytest.mark.parametrize(
    ("gold", "predicted", "names"),
    [
        ("Ines is a nurse.", "Ines's mother is a nurse.", ("Ines",)),
        ("Ines is a nurse.", "Ines’s late father is a nurse.", ("Ines",)),  # an adjective between
        ("The user's uncle farms sheep.", "The user's uncle's neighbour farms sheep.", ()),
        ("老周的儿子在华为上班。", "老周儿子的同事在华为上班。", ("老周",)),
        ("用户在练长跑。", "用户的室友在练长跑。", ()),
        ("小林养了一只猫。", "小林妈妈养了一只猫。", ("小林",)),  # owned straight after a name
    ],
)
def test_a_fact_moved_onto_a_relative_is_refused(gold, predicted, names):
    assert added_relative(gold, predicted, names)
    verdict = decide(gold, [], predicted, names)
    assert not verdict.accepted and "relative" in verdict.why, verdict


@pytest.mark.parametrize(
    ("gold", "predicted", "names"),
    [
        ("The user's father lent them money.", "The user's dad lent them money.", ()),  # synonym
        (
            "Rob is leaving Shell.",
            "The user's friend Rob is leaving Shell.",
            ("Rob",),
        ),  # introduces
        ("刘露在慕尼黑读研。", "用户的妹妹刘露在慕尼黑读研。", ("刘露",)),  # introduces
        ("用户搬到了杭州。", "用户和老公搬到了杭州。", ()),  # not owned: the user and her husband
        ("王先生在银行上班。", "王先生在一家银行上班。", ()),  # 先生 is a title here
        ("Ines is a nurse.", "Ines works as a nurse with her mother.", ("Ines",)),  # not owned
    ],
)
def test_no_relative_is_added_by_a_synonym_an_introduction_or_a_companion(gold, predicted, names):
    assert added_relative(gold, predicted, names) is None

"""The LoCoMo importer on small LoCoMo-format data the tests write: the cases,
their ids across the three input forms and repeated imports, validation, errors, and one
run of the imported suite with the scripted model."""

import copy
import json
import os
import zipfile
from pathlib import Path

import pytest

from hy_eval.cli import main
from hy_eval.harness import Runner, load_suite
from hy_eval.harness.datasets import (
    LocomoError,
    choose_keywords,
    fold_spaced,
    import_locomo,
    read_conversations,
)
from hy_eval.harness.datasets._locomo import KeywordChoice
from hy_eval.harness.datasets._locomo_cases import (
    fit_fact_text,
    keyword_chooser,
    reads_as_its_subject,
)
from hy_eval.memory._extract import MAX_FACT_CHARS
from tests.harness.run.test_run import config
from tests.harness.scripted_suite import SuiteModel


def turn(speaker, n, i, text, caption=None):
    t = {"speaker": speaker, "dia_id": f"D{n}:{i}", "text": text}
    if caption:
        t["blip_caption"] = caption
        t["img_url"] = ["https://example.invalid/x.jpg"]
    return t


def conversation():
    """Four sessions of Ana and Ben (the zip's flat form): sessions 1, 2 and 4 have
    observations (session 2 only Ben's, one with two evidence turns), session 3 none;
    Ana shares a photo in session 1."""
    return {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:00 pm on 2 May, 2023",
        "session_1": [
            turn(
                "Ana", 1, 1, "Hi Ben! I adopted a greyhound called Pixel.", "a photo of a grey dog"
            ),
            turn("Ben", 1, 2, "Lovely! I started cello lessons at the conservatory."),
            turn("Ana", 1, 3, "Pixel sleeps all day. Do you like the cello?"),
        ],
        "session_2_date_time": "3:00 pm on 9 May, 2023",
        "session_2": [
            turn("Ben", 2, 1, "I moved to Lisbon for a job at a bakery."),
            turn("Ana", 2, 2, "Wow, Lisbon! Which bakery?"),
            turn("Ben", 2, 3, "A small one near the river. I bake sourdough there."),
        ],
        "session_3_date_time": "9:00 am on 1 June, 2023",
        "session_3": [
            turn("Ana", 3, 1, "Long time no see!"),
            turn("Ben", 3, 2, "Indeed."),
        ],
        "session_4_date_time": "6:00 pm on 3 June, 2023",
        "session_4": [
            turn("Ben", 4, 1, "My sourdough won a prize at the Lisbon fair!"),
            turn("Ana", 4, 2, "Congrats! I ran my first marathon in Porto."),
        ],
        "session_1_observation": {
            "Ana": [
                ["Ana adopted a greyhound named Pixel.", "D1:1"],
                ["Ana's dog Pixel sleeps all day.", "D1:3"],
            ],
            "Ben": [["Ben is taking cello lessons at the conservatory.", "D1:2"]],
        },
        "session_2_observation": {
            "Ben": [
                ["Ben moved to Lisbon to work at a bakery.", ["D2:1", "D2:3"]],
                ["Ben bakes sourdough at the bakery.", "D2:3"],
            ]
        },
        "session_3_observation": {},
        "session_4_observation": {
            "Ben": [["Ben's sourdough won a prize at a fair in Lisbon.", "D4:1"]],
            "Ana": [["Ana ran her first marathon in Porto.", "D4:2"]],
        },
        "session_1_summary": "Ana and Ben talked.",
        "qa": [],
    }


def nested(conv, sample_id):
    """The same conversation in locomo10.json's form."""
    body = {
        k: v
        for k, v in conv.items()
        if k.startswith(("speaker_", "session_"))
        and "_observation" not in k
        and "_summary" not in k
    }
    obs = {k: v for k, v in conv.items() if k.endswith("_observation")}
    return {"sample_id": sample_id, "conversation": body, "observation": obs, "qa": []}


def second():
    """Another conversation: Cai and Dee, one session."""
    return {
        "speaker_a": "Cai",
        "speaker_b": "Dee",
        "session_1": [
            turn("Cai", 1, 1, "I teach chemistry."),
            turn("Dee", 1, 2, "I fix bicycles."),
        ],
        "session_1_observation": {
            "Cai": [["Cai teaches chemistry.", "D1:1"]],
            "Dee": [["Dee repairs bicycles.", "D1:2"]],
        },
    }


@pytest.fixture
def inputs(tmp_path):
    """The same two conversations as a zip (LoCoMo's layout), a folder and a list file."""
    convs = {"26": conversation(), "30": second()}
    zpath = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("data/multimodal_dialog/locomo10_v2/", "")
        for key, conv in convs.items():
            z.writestr(f"data/multimodal_dialog/locomo10_v2/{key}.json", json.dumps(conv))
    folder = tmp_path / "unzipped"
    folder.mkdir()
    for key, conv in convs.items():
        (folder / f"{key}.json").write_text(json.dumps(conv))
    listed = tmp_path / "locomo10.json"
    # Listed the other way round: the suite is in conversation order all the same.
    listed.write_text(json.dumps([nested(c, f"conv-{k}") for k, c in reversed(convs.items())]))
    return {"zip": zpath, "folder": folder, "list": listed}


def imported(path, out, **kw):
    import_locomo(path, out, **kw)
    return [json.loads(line) for line in (out / "locomo.jsonl").read_text().splitlines()]


def test_each_session_with_observations_gives_one_case_per_speaker(inputs, tmp_path):
    cases = imported(inputs["zip"], tmp_path / "suite")
    assert [c["id"] for c in cases] == [
        "locomo-26-s1-ana",
        "locomo-26-s1-ben",
        "locomo-26-s2-ana",
        "locomo-26-s2-ben",
        "locomo-26-s4-ana",
        "locomo-26-s4-ben",
        "locomo-30-s1-cai",
        "locomo-30-s1-dee",
    ]
    ana, ben = cases[0], cases[1]
    # Ana's side: she is the user, Ben a named human on the assistant role.
    assert [(m["role"], m["name"]) for m in ana["messages"]] == [
        ("user", "Ana"),
        ("assistant", "Ben"),
        ("user", "Ana"),
    ]
    assert [(m["role"], m["name"]) for m in ben["messages"]] == [
        ("assistant", "Ana"),
        ("user", "Ben"),
        ("assistant", "Ana"),
    ]
    # The image as its caption, the text kept.
    assert ana["messages"][0]["content"] == (
        "Hi Ben! I adopted a greyhound called Pixel. [shares an image: a photo of a grey dog]"
    )
    assert [(f["subject"], f["owner"], f["text"]) for f in ana["expect"]["facts"]] == [
        ("user", "user", "Ana adopted a greyhound named Pixel."),
        ("user", "user", "Ana's dog Pixel sleeps all day."),
        ("Ben", "user", "Ben is taking cello lessons at the conservatory."),
    ]
    assert [f["subject"] for f in ben["expect"]["facts"]] == ["Ana", "Ana", "user"]
    assert [f["keywords"] for f in ana["expect"]["facts"]] == [
        f["keywords"] for f in ben["expect"]["facts"]
    ]
    assert ana["tags"] == ["locomo", "auto_labelled", "image_caption"]
    assert ana["rules"] == ["M2", "A1", "A2", "A4"]
    assert ana["lang"] == "en" and "history" not in ana
    # Session 2: only Ben's observations, so Ana's case has no user fact (no A1).
    assert cases[2]["rules"] == ["M2", "A2", "A4"]
    assert {f["subject"] for f in cases[2]["expect"]["facts"]} == {"Ben"}


def test_keywords_are_in_the_fact_and_tell_the_case_facts_apart(inputs, tmp_path):
    for case in imported(inputs["zip"], tmp_path / "suite"):
        facts = case["expect"]["facts"]
        for i, f in enumerate(facts):
            text = fold_spaced(f["text"])
            assert 1 <= len(f["keywords"]) <= 2
            assert all(fold_spaced(k) in text for k in f["keywords"]), f
            assert all(k not in ("ana", "ben", "cai", "dee") for k in f["keywords"])
            others = [fold_spaced(o["text"]) for j, o in enumerate(facts) if j != i]
            assert not any(all(fold_spaced(k) in o for k in f["keywords"]) for o in others), f


def test_earlier_sessions_are_history_while_they_fit(inputs, tmp_path):
    cases = {c["id"]: c for c in imported(inputs["zip"], tmp_path / "a")}
    s4 = cases["locomo-26-s4-ben"]
    # Sessions 1-3 (3 has no observations but is history all the same), in order, whole.
    assert [(m["role"], m["content"]) for m in s4["history"]] == [
        (
            "assistant",
            "Hi Ben! I adopted a greyhound called Pixel. [shares an image: a photo of a grey dog]",
        ),
        ("user", "Lovely! I started cello lessons at the conservatory."),
        ("assistant", "Pixel sleeps all day. Do you like the cello?"),
        ("user", "I moved to Lisbon for a job at a bakery."),
        ("assistant", "Wow, Lisbon! Which bakery?"),
        ("user", "A small one near the river. I bake sourdough there."),
        ("assistant", "Long time no see!"),
        ("user", "Indeed."),
    ]
    assert "with_history" in s4["tags"]
    # A limit that holds only the last session: session 3 alone, whole.
    small = {c["id"]: c for c in imported(inputs["zip"], tmp_path / "b", history_chars=80)}
    assert [m["content"] for m in small["locomo-26-s4-ben"]["history"]] == [
        "Long time no see!",
        "Indeed.",
    ]
    # Session 2's earlier session does not fit in 80 characters: no history at all.
    assert "history" not in small["locomo-26-s2-ben"]
    none = imported(inputs["zip"], tmp_path / "c", history_chars=0)
    assert all("history" not in c for c in none)


def test_the_three_input_forms_and_repeated_imports_give_the_same_suite(inputs, tmp_path):
    texts = []
    for i, form in enumerate(("zip", "folder", "list", "zip")):
        import_locomo(inputs[form], tmp_path / f"out{i}")
        texts.append((tmp_path / f"out{i}" / "locomo.jsonl").read_bytes())
    assert texts[0] == texts[1] == texts[2] == texts[3]


def test_ids_do_not_move_when_other_sessions_or_conversations_change(inputs, tmp_path):
    before = {c["id"]: c for c in imported(inputs["zip"], tmp_path / "a")}
    conv = conversation()
    del conv["session_2_observation"]  # one session fewer with observations
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "26.json").write_text(json.dumps(conv))
    after = {c["id"]: c for c in imported(tmp_path / "one", tmp_path / "b")}
    assert set(after) == set(before) - {
        "locomo-26-s2-ana",
        "locomo-26-s2-ben",
        "locomo-30-s1-cai",
        "locomo-30-s1-dee",
    }
    assert after["locomo-26-s4-ana"]["messages"] == before["locomo-26-s4-ana"]["messages"]


def test_the_suite_validates_and_the_cli_reports_the_figures(inputs, tmp_path, capsys):
    out = tmp_path / "suite"
    assert main(["datasets", "import-locomo", str(inputs["list"]), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "cases: 8; gold facts: 18 (9 observations" in text
    assert "0 facts dropped" in text
    assert main(["datasets", "validate", str(out)]) == 0
    assert "suite: 8 cases ok (8 en, 0 zh)" in capsys.readouterr().out
    suite = load_suite(str(out))
    assert all({"locomo", "auto_labelled"} <= set(c.tags) for c in suite.cases)


class ByConversation(SuiteModel):
    """History repeats an earlier session's text: only the part after "Conversation:"
    names the case."""

    def case_of(self, prompt):
        return super().case_of(prompt.rsplit("Conversation:", 1)[-1])


def perfect_run(suite_dir, tmp_path):
    suite = load_suite(str(suite_dir))
    with ByConversation(suite.cases) as model:
        _, summary, code = Runner(
            config(model.server, tmp_path, suite=str(suite_dir), concurrency=2)
        ).run()
    assert code == 0, summary.failed_cases
    m = summary.metrics
    for name in ("case_pass", "fact_recall", "attribution_accuracy", "owner_accuracy"):
        assert m[name].value == 1.0, name
    assert m["case_pass"].n == len(suite.cases)
    return summary


def test_a_perfect_scripted_model_passes_every_imported_case(inputs, tmp_path):
    out = tmp_path / "suite"
    import_locomo(inputs["zip"], out)
    summary = perfect_run(out, tmp_path)
    assert summary.breakdown["tag"]["locomo"].cases == 8


@pytest.mark.skipif(
    not os.environ.get("HY_EVAL_LOCOMO"),
    reason="set HY_EVAL_LOCOMO to LoCoMo's locomo10.zip or locomo10.json (not in the repo)",
)
def test_the_real_locomo_data_imports_and_a_perfect_model_recalls_every_fact(tmp_path):
    """The figures of docs/datasets.md ("LoCoMo import"); about a minute."""
    stats = import_locomo(Path(os.environ["HY_EVAL_LOCOMO"]), tmp_path / "suite")
    assert (stats.conversations, stats.sessions_with_observations) == (10, 272)
    assert (stats.cases, stats.gold_facts, stats.observations) == (886, 4888, 2541)
    assert (stats.split_sessions, stats.over_limit, stats.unplaced) == (160, 0, 0)
    # 236 observations are over the 120 characters an answer's fact holds: 145 shortened
    # at a clause, with keywords chosen on the shortened text; 91 have no clause mark
    # within 120 characters, dropped.
    assert (stats.shortened, stats.too_long) == (145, 91)
    # 6 read as about someone else (a pet, a full name, the other speaker, a quote): dropped.
    assert stats.other_subject == 6
    k = stats.keyword_kinds
    assert (k["distinctive"], k["shared"], k["fallback"], stats.dropped) == (2419, 25, 0, 0)
    assert (stats.two_keywords, stats.duplicates, stats.cases_with_history) == (102, 0, 864)
    long = [f.text for c in load_suite(str(tmp_path / "suite")).cases for f in c.expect.facts]
    assert max(len(t) for t in long) <= MAX_FACT_CHARS
    perfect_run(tmp_path / "suite", tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c["session_1"][0].update(speaker="Zed"),
            "session_1.0.speaker: 'Zed' is neither Ana nor Ben",
        ),
        (lambda c: c.update(speaker_b="ana"), "speaker_a, speaker_b: the same name"),
        (
            lambda c: c["session_4_observation"].update(Zed=[["x", "D4:1"]]),
            "session_4_observation.Zed: not a speaker",
        ),
        (
            lambda c: c["session_4_observation"]["Ana"].append([3, "D4:2"]),
            "session_4_observation.Ana.1: a fact must be",
        ),
        (lambda c: c.pop("speaker_a"), "speaker_a, speaker_b: two names are needed"),
    ],
)
def test_input_that_is_not_locomo_is_one_line_naming_the_place(tmp_path, change, message):
    conv = copy.deepcopy(conversation())
    change(conv)
    f = tmp_path / "26.json"
    f.write_text(json.dumps(conv))
    with pytest.raises(LocomoError) as err:
        read_conversations(f)
    assert str(err.value).startswith(f"{f}: ")
    assert message in str(err.value)


def test_cli_errors_exit_2_and_other_suite_files_are_not_mixed_in(inputs, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert main(["datasets", "import-locomo", str(bad), "--out", str(tmp_path / "x")]) == 2
    assert "bad.json: json: invalid JSON" in capsys.readouterr().err
    out = tmp_path / "mixed"
    out.mkdir()
    (out / "mine.jsonl").write_text("{}\n")
    assert main(["datasets", "import-locomo", str(inputs["zip"]), "--out", str(out)]) == 2
    assert "holds other suite files (mine.jsonl)" in capsys.readouterr().err
    twice = [dict(nested(conversation(), "conv-26")), dict(nested(conversation(), "conv-26"))]
    (tmp_path / "twice.json").write_text(json.dumps(twice))
    with pytest.raises(LocomoError, match="conversation '26' again"):
        read_conversations(tmp_path / "twice.json")


def test_keyword_rule_rarest_first_a_second_when_shared_then_fallback_and_drop():
    facts = [
        "Ana adopted a greyhound.",  # adopted: in no other fact
        "Ana walks the greyhound in the park.",  # greyhound is rarest but shared: walk too
        "Ana walks to the park daily.",
        "Ana likes tea.",  # tea and like are both in the next fact: shared
        "Ana likes green tea.",
        "Ana is very happy about it.",  # a common word, yet the only candidate
        "Ana is here.",  # no content word: its longest word, a stop word
        "Ana, Ben.",  # nothing but names: dropped
    ]
    got = choose_keywords(facts, ["Ana", "Ben"])
    assert [(c.keywords, c.kind) if c else None for c in got] == [
        (("adopted",), "distinctive"),
        (("greyhound", "walk"), "distinctive"),
        (("daily",), "distinctive"),
        (("tea", "like"), "shared"),
        (("green",), "distinctive"),
        (("happy",), "distinctive"),
        (("here",), "fallback"),
        None,
    ]


PIXEL = "Ana adopted a greyhound named Pixel, who sleeps all day, and she walks him by the river."


def fit(text, keywords, limit=MAX_FACT_CHARS):
    """``fit_fact_text`` with a keyword rule that gives ``keywords`` whatever the text:
    the text kept, or ``None``."""
    got = fit_fact_text(text, lambda _: KeywordChoice(tuple(keywords), "distinctive"), limit)
    return None if got is None else got[0]


def test_a_long_fact_is_shortened_at_the_last_clause_that_keeps_its_keywords():
    text = PIXEL
    # The longest start ending at a clause that fits and holds the keyword; the comma
    # becomes a full stop.
    assert fit(text, ["greyhound"], limit=60) == (
        "Ana adopted a greyhound named Pixel, who sleeps all day."
    )
    assert fit(text, ["greyhound"], limit=40) == "Ana adopted a greyhound named Pixel."
    assert fit(text, [["dog", "sleeps"]], limit=60).endswith("all day.")  # any-of
    # A sentence's end stays; a point or comma inside a number is no boundary; keywords
    # are read as the keyword matcher reads them (1,500 is 1500).
    assert fit("It rained. Ben stayed home and read a long book.", ["rained"], 30) == ("It rained.")
    assert fit("Ben swam 1,500 metres in 3.5 hours, a new record.", ["1500"], 40) == (
        "Ben swam 1,500 metres in 3.5 hours."
    )
    # Chinese punctuation, with a Chinese full stop.
    zh = "小王在杭州开了一家咖啡馆，每天早上烤面包，周末还教邻居的孩子画画。"
    assert fit(zh, ["咖啡馆"], limit=20) == "小王在杭州开了一家咖啡馆。"
    # A text that fits is kept as it is, whatever it holds; the default limit is an
    # extraction answer's.
    assert fit(text, ["nothing"], limit=len(text)) == text
    assert fit("x, " * 39 + "end", ["none"]) == "x, " * 39 + "end"  # 120
    assert fit("x, " * 40 + "end.", ["x"]) == "x, " * 39 + "x."  # 124 -> 119


def test_a_long_fact_with_no_such_cut_is_dropped():
    text = PIXEL
    assert fit(text, ["river"], limit=60) is None  # the keyword is in the tail
    assert fit(text, ["greyhound", "river"], limit=60) is None  # every item kept
    assert fit(text, ["greyhound"], limit=30) is None  # no clause fits
    zh = "小王在杭州开了一家咖啡馆，每天早上烤面包，周末还教邻居的孩子画画。"
    assert fit(zh, ["画画"], limit=20) is None


def test_each_cut_gets_keywords_of_its_own_the_longest_that_gets_some_is_kept():
    pixel = KeywordChoice(("pixel",), "distinctive")
    tried = []

    def choose(text):
        tried.append(text)
        return None if "sleeps" in text else pixel

    # The longest cut gets no keywords, the next one does.
    assert fit_fact_text(PIXEL, choose, limit=60) == ("Ana adopted a greyhound named Pixel.", pixel)
    assert tried == [
        "Ana adopted a greyhound named Pixel, who sleeps all day.",
        "Ana adopted a greyhound named Pixel.",
    ]
    # With the case's keyword rule, each cut's keywords are chosen on the cut's own text.
    facts = ["Ben drinks green tea.", PIXEL]
    choose_pixel = keyword_chooser(facts, ["Ana", "Ben"])
    assert choose_pixel(1, PIXEL).keywords == ("greyhound",)
    assert fit_fact_text(PIXEL, lambda t: choose_pixel(1, t), limit=60)[1].keywords == (
        "greyhound",
    )
    assert choose_keywords(facts, ["Ana", "Ben"]) == [
        choose_pixel(i, f) for i, f in enumerate(facts)
    ]


#: Longer than an answer's fact holds; its rarest, longest word (the keyword chosen on the
#: whole text) is in the last clause, past the only clause cut that fits.
SOURDOUGH = (
    "Ben bakes sourdough at a small bakery near the river every single morning before dawn, "
    "and he hopes to open a patisserie one day."
)


def test_a_long_fact_whose_keyword_is_in_its_last_clause_is_kept_with_keywords_of_the_cut(
    tmp_path,
):
    assert len(SOURDOUGH) > MAX_FACT_CHARS
    facts = ["Ana drinks green tea.", SOURDOUGH, "Ben's sourdough won a prize at the fair."]
    whole = choose_keywords(facts, ["Ana", "Ben"])
    assert whole[1].keywords == ("patisserie",)  # on the whole text: in the tail
    conv = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1": [
            turn("Ana", 1, 1, "I drink green tea every day."),
            turn("Ben", 1, 2, "I bake sourdough at dawn; one day, a patisserie!"),
            turn("Ben", 1, 3, "My sourdough won a prize at the fair."),
        ],
        "session_1_observation": {
            "Ana": [[facts[0], "D1:1"]],
            "Ben": [[facts[1], "D1:2"], [facts[2], "D1:3"]],
        },
    }
    (tmp_path / "26.json").write_text(json.dumps(conv))
    stats = import_locomo(tmp_path / "26.json", tmp_path / "suite")
    assert (stats.shortened, stats.too_long, stats.dropped, stats.gold_facts) == (1, 0, 0, 6)
    cases = load_suite(str(tmp_path / "suite")).cases
    assert [c.id for c in cases] == ["locomo-26-s1-ana", "locomo-26-s1-ben"]
    for case in cases:
        texts = [f.text for f in case.expect.facts]
        kept = case.expect.facts[1]
        # Kept, shortened at its clause, with a keyword from the part kept: "sourdough"
        # is longer, but another fact of the case holds it too, so a word of this fact
        # alone comes first, as for any fact.
        assert kept.text == (
            "Ben bakes sourdough at a small bakery near the river every single morning before dawn."
        )
        assert kept.keywords == ["morning"]
        assert all("morning" not in fold_spaced(t) for t in texts if t != kept.text)  # distinctive
    assert stats.keyword_kinds == {"distinctive": 3}
    perfect_run(tmp_path / "suite", tmp_path)


def long_facts():
    """Ana and Ben: session 1 has a long fact that can be shortened and a short one,
    session 2 only a long fact whose keyword is past every clause that fits."""
    long_ok = (
        "Ana adopted a greyhound named Pixel, who sleeps all day on the sofa and barks at "
        "every single bicycle that rides past the house."
    )
    long_no = (
        "Ben plays the cello in a small orchestra that meets in the old church hall on the "
        "hill every Sunday afternoon with his friends."
    )
    assert len(long_ok) > MAX_FACT_CHARS and len(long_no) > MAX_FACT_CHARS
    return {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1": [
            turn("Ana", 1, 1, "I adopted a greyhound called Pixel. He sleeps and barks."),
            turn("Ben", 1, 2, "I drink green tea."),
        ],
        "session_2": [turn("Ben", 2, 1, "I play the cello in a small orchestra on Sundays.")],
        "session_1_observation": {
            "Ana": [[long_ok, "D1:1"]],
            "Ben": [["Ben drinks green tea.", "D1:2"]],
        },
        "session_2_observation": {"Ben": [[long_no, "D2:1"]]},
    }


def test_long_facts_are_shortened_or_dropped_and_counted(tmp_path, capsys):
    source = tmp_path / "26.json"
    source.write_text(json.dumps(long_facts()))
    out = tmp_path / "suite"
    assert main(["datasets", "import-locomo", str(source), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert (
        "long texts: 2 observations over the 120 characters an answer's fact holds: "
        "1 shortened at a clause boundary (keywords chosen on the shortened text), "
        "1 dropped (no such cut)"
    ) in text
    assert "cases: 2; gold facts: 4 (3 observations" in text
    cases = {c.id: c for c in load_suite(str(out)).cases}
    # Session 2 is left with no fact: no case, as for a session without observations.
    assert sorted(cases) == ["locomo-26-s1-ana", "locomo-26-s1-ben"]
    for case in cases.values():
        first = case.expect.facts[0]
        assert (first.text, first.keywords) == (
            "Ana adopted a greyhound named Pixel.",
            ["greyhound"],
        )
    assert main(["datasets", "validate", str(out)]) == 0  # no text over the limit
    stats = import_locomo(source, tmp_path / "again")
    assert (stats.shortened, stats.too_long, stats.dropped, stats.gold_facts) == (1, 1, 0, 4)
    assert sum(stats.keyword_kinds.values()) == 2  # the facts kept
    perfect_run(out, tmp_path)


def test_a_fact_whose_text_reads_as_another_subject_is_dropped(tmp_path):
    pair = ("Ana", "Ben")
    assert reads_as_its_subject("Ana's dog Pixel sleeps all day.", "Ana", pair)  # A6
    assert reads_as_its_subject("Ben drinks green tea.", "Ben", pair)
    assert not reads_as_its_subject("Pixel sleeps all day.", "Ana", pair)  # not a speaker
    assert not reads_as_its_subject("Ben drinks green tea.", "Ana", pair)  # listed wrongly
    conv = long_facts()
    conv["session_1_observation"]["Ana"] += [
        ["Pixel sleeps all day.", "D1:1"],
        ["Ben drinks green tea every day.", "D1:2"],
    ]
    (tmp_path / "26.json").write_text(json.dumps(conv))
    stats = import_locomo(tmp_path / "26.json", tmp_path / "suite")
    assert (stats.other_subject, stats.shortened, stats.too_long, stats.gold_facts) == (2, 1, 1, 4)
    assert "subjects: 2 observations dropped whose text reads as about someone other" in (
        stats.text
    )
    texts = [f.text for c in load_suite(str(tmp_path / "suite")).cases for f in c.expect.facts]
    assert "Pixel sleeps all day." not in texts and "Ben drinks green tea every day." not in texts
    perfect_run(tmp_path / "suite", tmp_path)


def test_a_case_over_the_line_limit_is_refused_before_anything_is_written(
    inputs, tmp_path, monkeypatch
):
    import hy_eval.harness.datasets._locomo_cases as cases_module

    monkeypatch.setattr(cases_module, "MAX_LINE_BYTES", 1200)
    with pytest.raises(LocomoError, match=r"locomo-26-s4-ana: \d+ bytes, over the 1200-byte"):
        import_locomo(inputs["zip"], tmp_path / "big")
    assert not (tmp_path / "big").exists()
    import_locomo(inputs["zip"], tmp_path / "small", history_chars=0)


def test_a_session_with_more_observations_than_an_answer_holds_is_cut_into_parts(tmp_path):
    conv = conversation()
    # Session 2 cites its turns as one string; one observation cites no turn of it.
    conv["session_2_observation"]["Ben"][0][1] = "D2:1, D2:3"
    conv["session_2_observation"]["Ben"].append(["Ben likes rivers.", "D9:9"])
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "26.json").write_text(json.dumps(conv))
    stats = import_locomo(tmp_path / "in", tmp_path / "out", max_facts=2)
    cases = {c.id: c for c in load_suite(str(tmp_path / "out")).cases}
    # Session 1 (3 observations) in two parts of 2 and 1; session 2's observations cite
    # turns 1-3, which cannot be cut apart, so it stays whole with 3 (over the limit).
    assert sorted(cases) == [
        "locomo-26-s1p1-ana",
        "locomo-26-s1p1-ben",
        "locomo-26-s1p2-ana",
        "locomo-26-s1p2-ben",
        "locomo-26-s2-ana",
        "locomo-26-s2-ben",
        "locomo-26-s4-ana",
        "locomo-26-s4-ben",
    ]
    p1, p2 = cases["locomo-26-s1p1-ana"], cases["locomo-26-s1p2-ana"]
    assert [m["content"][:9] for m in p1.messages] == ["Hi Ben! I", "Lovely! I"]
    assert [f.text for f in p1.expect.facts] == [
        "Ana adopted a greyhound named Pixel.",
        "Ben is taking cello lessons at the conservatory.",
    ]
    assert [m["content"] for m in p2.messages] == ["Pixel sleeps all day. Do you like the cello?"]
    assert [f.text for f in p2.expect.facts] == ["Ana's dog Pixel sleeps all day."]
    # The part before is the latest history.
    assert [m["content"][:9] for m in p2.history] == ["Hi Ben! I", "Lovely! I"]
    assert "session_part" in p2.tags and "session_part" not in cases["locomo-26-s4-ana"].tags
    assert len(cases["locomo-26-s2-ben"].expect.facts) == 3
    assert (stats.split_sessions, stats.over_limit, stats.unplaced) == (1, 1, 1)

"""Metamorphic runs end to end (E2, E3, E5, A1, A2): ``run --perturb`` runs the
base and the perturbed suite in one run folder through the real OpenAI provider against
the loopback server, and a scripted model that answers wrongly only for one name shows
exactly the expected consistency drop."""

import json

from hy_eval.cli import main
from hy_eval.harness import load_suite
from hy_eval.harness.analysis import changed_checks, consistency, verdicts_of
from hy_eval.harness.datasets import Skip, perturb
from hy_eval.harness.run import run_with_perturbations
from hy_eval.harness.runlog import CaseRecord
from tests.harness.run.test_run import config as run_config
from tests.harness.scripted_suite import SuiteModel, model_args, perfect_extraction

USERS = ["Tim", "Lena", "Dana", "Ines", "Priya", "Ava", "Raj", "Omar"]
OTHERS = ["John", "Rachel", "Marco", "Kenji", "Sofia", "Felix", "Nadia", "Carl"]
JOBS = ["nurse", "pilot", "baker", "welder", "tailor", "plumber", "jeweller", "glazier"]


def write_suite(folder):
    """Eight cases: a named user states a job, a named human another; 3 checks each."""
    folder.mkdir()
    lines = []
    for i, (user, other) in enumerate(zip(USERS, OTHERS, strict=True)):
        mine, theirs = JOBS[i], JOBS[(i + 1) % len(JOBS)]
        case = {
            "id": f"p-{i:02d}",
            "lang": "en",
            "rules": ["A1", "A2"],
            "tags": ["toy", f"pair{i % 2}"],
            "messages": [
                {"role": "user", "name": user, "content": f"I work as a {mine}."},
                {"role": "assistant", "name": other, "content": f"I trained as a {theirs}."},
            ],
            "expect": {
                "facts": [
                    {"subject": "user", "owner": "user", "keywords": [mine]},
                    {"subject": other, "owner": "user", "keywords": [theirs]},
                ],
                "profile": {"name": user},
            },
        }
        lines.append(json.dumps(case))
    (folder / "toy.jsonl").write_text("\n".join(lines) + "\n")
    return load_suite(str(folder))


def config(server, tmp_path, suite_dir, **kw):
    return run_config(server, tmp_path, suite=str(suite_dir), concurrency=4, **kw)


def wrong_for(case, bad):
    """The perfect answer, except that facts about ``bad`` are written about the user."""
    ext = perfect_extraction(case)
    for f, gold in zip(ext["facts"], case.expect.facts, strict=True):
        if gold.subject == bad:
            f["text"] = "The user " + " ".join(gold.keywords) + "."
    return ext


def scripted(cases, perturbed, bad):
    """A model that knows the base cases and their perturbed twins (under ids of its own)."""
    twins = [p.model_copy(update={"id": p.id + "~p"}) for p in perturbed]
    extraction = {c.id: perfect_extraction(c) for c in cases}
    extraction.update({t.id: wrong_for(t, bad) for t in twins})
    return SuiteModel([*cases, *twins], extraction)


def test_one_wrong_name_drops_consistency_by_exactly_its_checks(tmp_path, capsys):
    suite = write_suite(tmp_path / "toy")
    results = [perturb(c, "rename", 0) for c in suite.cases]
    assert not any(isinstance(r, Skip) for r in results)
    perturbed = [r.case for r in results]
    # The name the model gets wrong: the new name of the first case's named human.
    bad = perturbed[0].named_speakers[-1]
    hit = sum(
        1 for p in perturbed for f in p.expect.facts if f.subject == bad
    )  # each such fact check flips
    assert hit >= 1
    gates = tmp_path / "gates.toml"
    gates.write_text("[consistency.rename]\nmin = 0.95\n[consistency.order]\nmin = 0.5\n")
    run_dir = tmp_path / "run"
    with scripted(suite.cases, perturbed, bad) as model:
        args = ["--suite", str(tmp_path / "toy"), *model_args(model.server), "--cache-mode"]
        args += ["off", "--out", str(run_dir), "--quiet", "--perturb", "rename"]
        code = main([*args, "--gate", str(gates)])
    assert code == 1  # the floor of 0.95 is not met, and order was not run
    out = capsys.readouterr()
    checks = 3 * len(suite.cases)
    value = (checks - hit) / checks
    assert f"perturbation rename: consistency {value:.3f}" in out.out
    assert f"gate FAILED: consistency.rename = {value:.3f}" in out.err
    assert "consistency.order: the run has no order perturbation" in out.err
    summary = json.loads((run_dir / "summary.json").read_text())
    section = summary["perturbations"]["rename"]
    assert section["checks"] == checks
    assert section["checks_changed"] == hit
    assert section["consistency"]["value"] == value
    lo, hi = section["consistency"]["ci"]
    assert lo < section["consistency"]["value"] <= hi
    assert section["metrics"]["attribution_accuracy"]["base"] == 1.0
    assert section["metrics"]["attribution_accuracy"]["perturbed"] < 1.0
    wrong = [p.id for p in perturbed if bad in p.named_speakers]
    assert [f["id"] for f in section["changed_cases"]] == wrong and wrong[0] == "p-00"
    assert {tuple(f["changed"]) for f in section["changed_cases"]} == {("fact#1",)}
    # The facts diff maps the new names back: only the subject of the wrong fact differs.
    diff = json.dumps(section["changed_cases"][0]["facts_diff"])
    assert "named:" in diff and "user" in diff
    by_tag = {t: sum(int(w[2:]) % 2 == int(t[-1]) for w in wrong) for t in ("pair0", "pair1")}
    for tag, changed in by_tag.items():
        assert section["fragility"]["tag"][tag]["changed"] == changed
        assert section["fragility"]["tag"][tag]["value"] == (12 - changed) / 12
    # Written to the run folder: report.md and the perturbed run's own folder.
    report = (run_dir / "report.md").read_text()
    assert "## Perturbation `rename`" in report and "| p-00 | fact#1 |" in report
    manifest = json.loads((run_dir / "perturb" / "rename" / "manifest.json").read_text())
    assert manifest["params"]["perturb"] == "rename"
    # compare of the base run with its perturbed run: the same consistency, text and JSON.
    out_json = tmp_path / "cmp.json"
    assert (
        main(
            ["compare", str(run_dir), str(run_dir / "perturb" / "rename"), "--json", str(out_json)]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert f"consistency under perturbation rename: {value:.3f}" in text
    assert "changed p-00: fact#1" in text and "most fragile: " in text
    cmp = json.loads(out_json.read_text())
    assert cmp["perturbation"] == "rename"
    assert cmp["consistency"]["checks_changed"] == hit
    assert cmp["consistency"]["changed_cases"] == section["changed_cases"]


def test_a_perfect_model_is_fully_consistent_under_every_perturbation_and_resumes(tmp_path):
    suite = write_suite(tmp_path / "toy")
    # rename is covered by the test above (its other cases stay consistent).
    names = ["swap_perspective", "anthropic", "name_line"]
    twins = []
    for name in names:
        twins += [r.case for c in suite.cases if not isinstance(r := perturb(c, name, 0), Skip)]
    # Each perturbation's twins under distinct ids, answered perfectly.
    tagged = [t.model_copy(update={"id": f"{t.id}~{i}"}) for i, t in enumerate(twins)]
    with SuiteModel([*suite.cases, *tagged]) as model:
        # order: no case of this suite has two named humans, so nothing runs for it.
        cfg = config(model.server, tmp_path, tmp_path / "toy")
        run_dir, summary, code = run_with_perturbations(cfg, [*names, "order"], 0)
        assert code == 0
        # --resume RUN --perturb ...: a perturbed folder killed after three cases finishes.
        sub = run_dir / "perturb" / "anthropic" / "cases.jsonl"
        sub.write_text("".join(sub.read_text().splitlines(keepends=True)[:3]))
        again = config(model.server, tmp_path, tmp_path / "toy", out=None, resume=str(run_dir))
        _, summary, code = run_with_perturbations(again, [*names, "order"], 0)
    assert code == 0
    assert len(sub.read_text().splitlines()) == len(suite.cases)
    for name in names:
        s = summary.perturbations[name]
        assert s.consistency.value == 1.0, name
        assert s.cases == len(suite.cases) and s.changed_cases == []
    order = summary.perturbations["order"]
    assert (order.cases, order.skipped, order.consistency.value) == (0, 8, None)


def _rec(cid, checks, rules=("A1",), tags=()):
    return CaseRecord.model_validate(
        {
            "id": cid,
            "rules": list(rules),
            "tags": list(tags),
            "score": {
                "passed": all(ok for _, ok in checks),
                "checks": [{"check": k, "ok": ok} for k, ok in checks],
                "facts": [],
            },
        }
    )


def test_verdicts_keyed_by_kind_and_occurrence():
    rec = _rec("a", [("fact", True), ("fact", False), ("absent", True)])
    assert verdicts_of(rec) == {"fact#0": True, "fact#1": False, "absent#0": True}
    # A parse failure is a check of its own; an errored case fails what it did not check.
    assert changed_checks({"fact#0": True}, {"fact#0": True, "parse#0": False}) == (
        2,
        ["parse#0"],
    )
    assert changed_checks({"fact#0": True}, {"error#0": False}) == (2, ["error#0", "fact#0"])
    # A check only one gold has is not paired (swap_perspective adds an L0 list).
    assert changed_checks({"fact#0": True}, {"fact#0": True, "profile_absent#0": True}) == (
        1,
        [],
    )


def test_consistency_counts_case_check_pairs():
    base = [_rec("a", [("fact", True), ("fact", True)]), _rec("b", [("fact", False)])]
    pert = [_rec("a", [("fact", True), ("fact", False)]), _rec("b", [("fact", False)])]
    c = consistency(base, pert)
    assert (c.checks, c.checks_changed, c.consistency.value) == (3, 1, 2 / 3)
    assert c.changed_count == 1 and c.changed_cases[0].changed == ["fact#1"]
    assert c.fragility.rule["A1"].value == 2 / 3


def test_an_unknown_perturbation_exits_2_before_any_call(capsys):
    assert main(["--suite", "multi_speaker", "--perturb", "rename,shuffle", "--limit", "1"]) == 2
    assert "--perturb: unknown perturbation shuffle (known: rename," in capsys.readouterr().err


def test_a_replay_only_miss_in_a_perturbed_run_says_how_to_record_it(tmp_path, capsys):
    """The base run's answers are in the cache, the perturbed run's are not: the hint is a
    read-write run with --perturb (``cassette record`` has no --perturb), and the
    perturbed run's start line names the perturbation and its seed."""
    suite = write_suite(tmp_path / "toy")
    cache = tmp_path / "c.sqlite"
    with SuiteModel(suite.cases) as model:
        args = ["--suite", str(tmp_path / "toy"), *model_args(model.server)]
        args += ["--cache", str(cache), "--quiet"]
        assert main([*args, "--out", str(tmp_path / "base")]) == 0
        capsys.readouterr()
        args += ["--out", str(tmp_path / "run"), "--cache-mode", "replay-only"]
        code = main([*args, "--perturb", "rename", "--perturb-seed", "3"])
    assert code == 4
    err = capsys.readouterr().err
    assert "perturbation rename (seed 3)" in err.splitlines()[1]
    last = err.strip().splitlines()[-1]
    assert "cassette record --suite" not in last
    assert "The answers of the perturbed run (rename, seed 3) are not in the cache" in last
    assert last.endswith(
        f"python run_eval.py --suite {tmp_path / 'toy'} --variant default --provider openai "
        f"--model scripted --base-url {model.server.openai_url} --perturb rename "
        f"--perturb-seed 3 --cache {cache}"
    )

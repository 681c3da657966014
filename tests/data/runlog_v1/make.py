"""How the run folders beside this file were made (by the code of commit 6df52f2, before
summary.json, gates.json, the baseline and the comparison had models): a seven-case toy
suite run by the scripted model through the real OpenAI provider against the loopback
server, with planted mistakes, a rename perturbation whose twins the model gets wrong for
one name, a baseline blessed from a first run, gates against it, a keyword-matcher run
and two comparisons. Kept to say what the files are; re-running it writes a folder of
today's form, not the old one.

    PYTHONPATH=$PWD python tests/data/runlog_v1/make.py OUT
"""

import contextlib
import io
import json
import shutil
import sys
from pathlib import Path

from hy_eval.cli import main
from hy_eval.harness import load_suite
from hy_eval.harness.datasets import perturb
from tests.harness.run.test_metamorphic import wrong_for
from tests.harness.scripted_suite import SuiteModel, model_args, perfect_extraction

PAIRS = [("Tim", "John", "nurse", "pilot"), ("Lena", "Rachel", "baker", "welder")]
PAIRS += [("Dana", "Marco", "tailor", "plumber"), ("Ines", "Kenji", "jeweller", "glazier")]

#: What a run folder keeps here: no page, no plots (the readers do not read them).
KEEP = ("manifest.json", "cases.jsonl", "summary.json", "report.md", "gates.json")

GATES = """alpha = 0.05
[metrics.case_pass]
max_drop = 0.0
[metrics.attribution_accuracy]
min = 0.99
max_drop = 0.0
[metrics.misattribution_rate]
max_rise = 0.0
[metrics.error_rate]
max = 0.0
[consistency.rename]
min = 0.95
"""


def write_suite(folder: Path):
    """Four cases of a named user and a named human (two jobs each), and three where the
    user talks about coffee with a memory about the user that must stay untouched."""
    folder.mkdir(parents=True)
    lines = []
    for i, (user, other, mine, theirs) in enumerate(PAIRS):
        lines.append(
            {
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
        )
    for i in range(3):
        lines.append(
            {
                "id": f"t-{i:02d}",
                "lang": "en",
                "rules": ["A1", "R1"],
                "tags": ["toy", "coffee"],
                "existing": [{"id": "m1", "text": "The user likes tea and coffee."}],
                "messages": [
                    {"role": "user", "name": "Tim", "content": f"I like coffee number {i}."},
                    {"role": "assistant", "name": "John", "content": "Nice."},
                ],
                "expect": {
                    "facts": [
                        {"subject": "user", "owner": "user", "keywords": ["coffee", f"#{i}"]}
                    ],
                    "absent": [{"subject": "John", "keywords": ["coffee", f"#{i}"]}],
                    "profile": {"name": "Tim", "absent": ["Berlin"]},
                    "untouched": ["m1"],
                },
            }
        )
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    (folder / "toy.jsonl").write_text(text)
    return load_suite(str(folder))


def scripted(suite):
    perturbed = [perturb(c, "rename", 0).case for c in suite.cases]
    bad = perturbed[0].named_speakers[-1]
    twins = [p.model_copy(update={"id": p.id + "~p"}) for p in perturbed]
    ext = {c.id: perfect_extraction(c) for c in suite.cases}
    ext.update({t.id: wrong_for(t, bad) for t in twins})
    # Planted: a subject swap, an owner wrong, a leak into L0, a cross-subject UPDATE the
    # guard blocks, an unparseable reconcile answer.
    ext["t-00"] = {"facts": [{"text": "John likes coffee #0.", "owner": "user"}], "basic_info": {}}
    ext["p-01"]["facts"][0]["owner"] = "agent"
    ext["p-02"]["basic_info"] = {"name": "Dana", "location": "Berlin"}
    rec = {
        "t-01": {
            "operations": [
                {"op": "UPDATE", "fact": 0, "target_ids": ["m1"], "text": "John likes coffee #1."}
            ]
        },
        "t-02": "not json at all",
    }
    return SuiteModel([*suite.cases, *twins], ext, rec)


def run(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def make(out: Path) -> None:
    work = out / "work"
    suite = write_suite(work / "toy")
    (work / "gates.toml").write_text(GATES)
    with scripted(suite) as model:
        common = ["--suite", str(work / "toy"), *model_args(model.server), "--quiet"]
        common += ["--cache-mode", "off"]
        assert run([*common, "--out", str(work / "base")])[0] == 0
        code, _, _ = run(
            ["baseline", "bless", str(work / "base"), "--out", str(out / "baseline.json")]
        )
        assert code == 0
        gated = ["--gate", str(work / "gates.toml"), "--baseline", str(out / "baseline.json")]
        code, text, err = run([*common, "--out", str(work / "run"), "--perturb", "rename", *gated])
        assert code == 1, err  # the attribution floor and the consistency floor fail
        (out / "run.txt").write_text(text + err)
        code, _, _ = run([*common, "--out", str(work / "kw"), "--matcher", "keyword"])
        assert code == 0
    for name, a, b, flags in (
        ("cmp", "kw", "run", ["--mixed-matchers"]),
        ("cmp-perturb", "run", "run/perturb/rename", []),
    ):
        code, text, _ = run(
            ["compare", str(work / a), str(work / b), *flags, "--json", str(out / f"{name}.json")]
        )
        assert code == 0
        (out / f"{name}.txt").write_text(text)
    for folder in ("run", "run/perturb/rename", "kw"):
        (out / folder).mkdir(parents=True)
        for name in (*KEEP, "perturb.json"):
            if (work / folder / name).is_file():
                shutil.copy(work / folder / name, out / folder / name)
    shutil.copytree(work / "toy", out / "toy")
    shutil.rmtree(work)


if __name__ == "__main__":
    make(Path(sys.argv[1]))

"""Every command in README.md and docs/*.md, run as a user runs it (a newcomer's first
hour: docs/ci.md's gate command failed on a fresh clone for a step that was only in prose).

The fenced ``bash`` blocks are read, each command (a line, ``\\`` joined) is looked up in
``HOW`` and run in a scratch folder laid out like a fresh clone (the repository's
datasets, prompts, cassettes and gates, and a ``reports/`` of its own), so that no command
can write into the checkout. How a command runs, when it cannot run on a model that is not
here, is said in its entry:

- ``loopback``: the model flags point at a scripted OpenAI- or Anthropic-compatible server
  on 127.0.0.1 that answers every case of the suite as a perfect model would (and anything
  else with an empty answer); a run over a whole suite gets ``--sample 2``;
- ``cassette``: the embedded model's answers come from the committed cassette
  (``--cache-mode replay-only`` on an imported copy);
- placeholders (``RUN_A``, ``DIR``, ``conv.json`` ...) are files and folders the scratch
  holds, made by the commands before them or written here;
- ``skip``: a command that sets up a machine or is this test command itself, with why.

A command in a doc that ``HOW`` does not name fails the first test: documenting a command
means saying here how it is checked. Each command must exit as ``HOW`` says (0 unless
named), with no traceback."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hy_eval.harness import load_suite
from tests.harness.scripted_suite import SuiteModel
from tests.loopback import BatchScript, LoopbackServer, Reply, anthropic_message, openai_completion

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CASSETTE = "tests/cassettes/multi_speaker.default.local.jsonl"


@dataclass
class How:
    """How one documented command is run: ``kind`` (run, loopback, cassette, server,
    skip), text appended, the exit code it must give, and why, for a skip."""

    kind: str = "run"
    append: str = ""
    code: int = 0
    why: str = ""
    replace: dict[str, str] = field(default_factory=dict)


LOCK_WHY = (
    "regenerates the hash-pinned lock files from the package index (minutes, and the "
    "answer is the index's that day); tests/reliability/test_worker_requirements.py checks "
    "the files it made"
)
VLLM_WHY = (
    "vLLM is not installed on these machines (no GPU); tests/harness/run/test_batch_folder.py "
    "answers a request file with docs/llm.md's loop over an OpenAI-compatible endpoint and "
    "reads the output file back"
)
LOOP = "--provider openai --base-url {openai} --model scripted --api-key sk-test"
SUITE_LOOP = LOOP + " --sample 2 --quiet"
REPLAY = "--cache-mode replay-only --cache {replay}"
SYSTEMS_REPLAY = "--cache-mode replay-only --cache {systems} --quiet --max-error-rate 1"

#: Every documented command, in the order the docs give them, and how it runs here.
HOW: dict[str, How] = {
    # README: the two commands, and real models.
    "python -m venv .venv && . .venv/bin/activate": How(
        "skip", why="makes a virtual environment; CI installs into its own Python"
    ),
    'pip install -e ".[dev]" && python run_eval.py --suite multi_speaker': How(
        "cassette",
        append=REPLAY + " --sample 2 --quiet",
        replace={'pip install -e ".[dev]" && ': ""},  # .ci/run installs, as step 1
    ),
    "python -m pytest": How("skip", why="the test command itself, which runs this test"),
    "export OPENAI_API_KEY=...": How("skip", why="sets a key; the loopback takes any"),
    "export ANTHROPIC_API_KEY=...": How("skip", why="sets a key; the loopback takes any"),
    "python run_eval.py --suite multi_speaker --provider openai --model gpt-4o-mini": How(
        "loopback", append="--base-url {openai} --api-key sk-test --sample 2 --quiet"
    ),
    "python run_eval.py --suite multi_speaker --provider openai --base-url "
    "http://localhost:11434/v1 --model qwen2.5:7b": How(
        "loopback",
        append="--api-key sk-test --sample 2 --quiet",
        replace={"http://localhost:11434/v1": "{openai}"},
    ),
    "python run_eval.py --suite multi_speaker --provider anthropic --model "
    "claude-3-5-haiku-latest": How(
        "loopback", append="--base-url {anthropic} --api-key sk-test --sample 2 --quiet"
    ),
    # Other memory systems: replayed from their cassettes (reports/systems/make.sh).
    # (--limit 2: the first two of the twenty, which the systems' cassettes hold.)
    "python run_eval.py --suite multi_speaker --system hy_memory --sample 20": How(
        "cassette", append="--limit 2 " + SYSTEMS_REPLAY
    ),
    "python run_eval.py --suite multi_speaker --system mem0 --sample 20": How(
        "cassette", append="--limit 2 " + SYSTEMS_REPLAY
    ),
    "python run_eval.py --suite multi_speaker --systems hy_eval,hy_memory,mem0 --provider "
    "openai --model gpt-4o-mini": How(
        "loopback",
        append="--base-url {openai} --api-key sk-test --sample 1 --quiet --max-error-rate 1 "
        "--out {unique}",
    ),
    "python run_eval.py table RUN_A RUN_B RUN_C --out DIR": How(),
    # The reference list.
    "hy-eval render conv.json": How(),
    "hy-eval parse-history l1.txt": How(),
    "hy-eval datasets validate [SUITE]": How(),
    "hy-eval datasets stats multi_speaker [--rates RUN]": How(),
    "hy-eval datasets import-locomo locomo10.zip --out DIR": How(
        replace={"DIR": "{scratch}/locomo"}
    ),
    "hy-eval run --suite history": How(),
    "hy-eval matchers evaluate datasets/matcher_pairs/bench.jsonl --split test": How(),
    "hy-eval matchers draw RUN_DIR --out pairs.jsonl --blind blind.jsonl": How(),
    "hy-eval matchers agree A.jsonl B.jsonl": How(),
    # docs/metrics.md: a capable model's pairs, drawn from a run here (the loopback's
    # "scripted" model); the bench rebuilt and re-measured on a copy of the datasets, so
    # that nothing is written into the checkout through the scratch's link.
    "python run_eval.py matchers draw RUN_DIR --source capable_run --model gpt-4o-mini "
    "--prefix g4omini- --limit 400 --out capable_drawn.jsonl --blind capable_blind.jsonl": How(),
    "python datasets/matcher_pairs/build_bench.py": How(
        replace={
            "python datasets": f"cp -rL datasets {{scratch}}/ds-copy && {sys.executable} "
            "{scratch}/ds-copy"
        }
    ),
    "python run_eval.py matchers evaluate datasets/matcher_pairs/bench.jsonl --split test "
    "--quality datasets/matcher_pairs/quality.json": How(
        replace={"--quality datasets/matcher_pairs/quality.json": "--quality {scratch}/q.json"}
    ),
    "hy-eval memory add conv.json --user-id tim --db mem.sqlite": How("loopback", append=LOOP),
    "hy-eval memory search coffee --user-id tim --db mem.sqlite": How(),
    "hy-eval memory show --user-id tim --db mem.sqlite": How(),
    "hy-eval cache stats": How(),
    "hy-eval cache explain KEYPREFIX": How(),
    "hy-eval serve --provider openai --model gpt-4o-mini": How(
        "server", append="--base-url {openai} --api-key sk-test --port 0"
    ),
    "hy-eval compare RUN_A RUN_B": How(),
    "hy-eval table RUN_A RUN_B RUN_C --out DIR": How(),
    "hy-eval compare RUN_A RUN_B --html cmp.html": How(),
    "hy-eval baseline bless RUN_DIR": How(
        code=2,
        why="bless refuses to shrink the committed 457-case baseline to a 2-case run (docs/ci.md)",
    ),
    "hy-eval report RUN_DIR": How(),
    "python run_eval.py --suite multi_speaker --gate gates.toml": How(
        "loopback", append=SUITE_LOOP
    ),
    "hy-eval cassette record --suite multi_speaker": How("loopback", append=LOOP + " --sample 2"),
    "python run_eval.py --suite multi_speaker --perturb rename,swap_perspective": How(
        "loopback", append=SUITE_LOOP
    ),
    # docs/ci.md: on a fresh clone, the import and the gate as written (one case of the
    # replay, to bound the test's time; the gate compares it with the baseline's).
    "python run_eval.py cassette import tests/cassettes/multi_speaker.default.local.jsonl": How(),
    "python run_eval.py --suite multi_speaker --cache-mode replay-only --gate .ci/gates.toml "
    "--baseline reports/baselines/multi_speaker.json": How(
        "cassette", append="--filter id=ms-en-0001 --quiet"
    ),
    "hy-eval cassette record --suite multi_speaker --variant default": How(
        "loopback", append=LOOP + " --sample 2"
    ),
    "python run_eval.py --suite multi_speaker --cache-mode replay-only --out /tmp/replay": How(
        "cassette",
        append="--cache {replay} --sample 2 --quiet",
        replace={"/tmp/replay": "{scratch}/replay"},
    ),
    "hy-eval baseline bless /tmp/replay": How(
        code=2,
        why="bless refuses to shrink the committed 457-case baseline to a 2-case run (docs/ci.md)",
        replace={"/tmp/replay": "{scratch}/replay"},
    ),
    "git add tests/cassettes reports/baselines": How(
        "skip", why="stages files in the user's checkout"
    ),
    "python run_eval.py cassette agree --cache CACHE [--cassette FILE] [--run RUN_DIR]": How(),
    # docs/systems.md
    "python run_eval.py --suite multi_speaker --system hy_memory": How(
        "cassette", append="--sample 20 --limit 2 " + SYSTEMS_REPLAY
    ),
    "python run_eval.py --suite multi_speaker --systems hy_eval,hy_memory,mem0": How(
        "cassette", append="--sample 20 --limit 2 --out {unique} " + SYSTEMS_REPLAY
    ),
    "python run_eval.py compare reports/RUN_A reports/RUN_B": How(),
    "bash hy_eval/harness/systems/workers/requirements/lock.sh": How("skip", why=LOCK_WHY),
    "bash hy_eval/harness/systems/workers/requirements/lock.sh hy_memory": How(
        "skip", why=LOCK_WHY
    ),
    # docs/capable.md: the capable-model study's replays, which .ci/run runs as written
    # (about a minute each, with the systems' virtualenvs the tests make).
    "bash reports/capable/replay.sh /tmp/capable": How(
        "skip", why=".ci/run runs reports/capable/replay.sh on every push"
    ),
    "bash reports/systems/make.sh replay-capable /tmp/sys": How(
        "skip", why=".ci/run runs make.sh replay-capable and compares its matrix.json"
    ),
    # docs/architecture.md: a diagram's line that starts like a command.
    "hy-eval serve to the same llm/ client)": How("skip", why="a line of a diagram"),
    # docs/datasets.md: the real LoCoMo file, from a clone this machine has not; the same
    # import and validation run on the test's own LoCoMo-shaped zip.
    "git --git-dir=<a clone of snap-research/locomo>/.git show HEAD:data/locomo10.zip > "
    "/tmp/locomo10.zip": How("skip", why="needs a clone of the LoCoMo repository"),
    "hy-eval datasets import-locomo /tmp/locomo10.zip --out /tmp/locomo-suite": How(
        replace={"/tmp/locomo10.zip": "locomo10.zip", "/tmp/locomo-suite": "{scratch}/lsuite"}
    ),
    "hy-eval datasets validate /tmp/locomo-suite": How(
        replace={"/tmp/locomo-suite": "{scratch}/lsuite"}
    ),
    # docs/llm.md: batches, through the loopback's batch API, and as a folder.
    "python run_eval.py --suite multi_speaker --provider openai --model gpt-4o-mini --batch": How(
        "loopback",
        append="--base-url {openai} --api-key sk-test --sample 2 --quiet --batch-poll-interval 0.1",
    ),
    "python run_eval.py --suite multi_speaker --provider openai --model "
    "Qwen/Qwen2.5-7B-Instruct --structured json_schema --batch-dir batches/ --out "
    "reports/qwen": How(
        append="--sample 2 --quiet",
        code=5,
        why="the first round: its requests wait in the folder (exit 5, docs/reliability.md)",
    ),
    "vllm run-batch -i batches/hy-<digest>.requests.jsonl -o "
    "batches/hy-<digest>.results.part --model Qwen/Qwen2.5-7B-Instruct": How("skip", why=VLLM_WHY),
    "mv batches/hy-<digest>.results.part batches/hy-<digest>.results.jsonl": How(
        "skip", why=VLLM_WHY
    ),
    "hy-eval serve --provider local --port 8123": How("server", replace={"8123": "0"}),
    "hy-eval serve --provider openai --base-url http://127.0.0.1:8000/v1 --cache-mode "
    "replay-only": How("server", replace={"http://127.0.0.1:8000/v1": "{openai}"}),
}


#: The words a command starts with, in a fenced block without a language (which may hold
#: a program's output instead): a line starting otherwise there is not a command.
COMMAND_WORDS = ("python ", "hy-eval ", "bash ", "pip ", "git ", "export ", "vllm ", "mv ")


def commands() -> list[tuple[str, str]]:
    """(doc, command) for every command of a fenced block (``bash``, ``sh``, or no
    language and a line starting with a ``COMMAND_WORDS`` word), comments left out."""
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
            if lang not in ("bash", "sh", "shell", ""):
                continue
            for line in body.replace("\\\n", " ").splitlines():
                command = re.sub(r"\s+#\s.*$", "", line).strip()
                command = re.sub(r"\s+", " ", command)
                if not command or command.startswith("#"):
                    continue
                if lang or command.startswith(COMMAND_WORDS):
                    out.append((doc.relative_to(ROOT).as_posix(), command))
    return out


def test_every_documented_command_says_how_it_is_checked():
    documented = {command for _, command in commands()}
    unknown = sorted(documented - set(HOW))
    assert not unknown, f"commands in the docs that HOW does not name: {unknown}"
    stale = sorted(set(HOW) - documented)
    assert not stale, f"HOW names commands no doc gives any more: {stale}"
    for command, how in HOW.items():
        assert how.kind in ("run", "loopback", "cassette", "server", "skip"), command
        assert how.kind != "skip" or how.why, command


# -- running them ----------------------------------------------------------------------


class DocsModel(SuiteModel):
    """The suite's perfect model, on both vendors' wire formats; anything it does not know
    (a perturbed case, another system's own prompt) gets an empty answer."""

    def answer(self, req):
        anthropic = req.path.endswith("/messages")
        tools = req.body.get("tools") or [] if isinstance(req.body, dict) else []
        if anthropic and tools:
            name = tools[0].get("name", "answer")
            # The anthropic provider asks for JSON through a tool: the same routing.
            form = {"json_schema": {"name": name}}
            shim = type(req)(req.index, req.path, {**req.body, "response_format": form})
            shim.body["messages"] = [{"role": "user", "content": req.prompt_text}]
            try:
                reply = super().answer(shim)
                text = reply.body["choices"][0]["message"]["content"]
                answer = json.loads(text)
            except Exception:
                answer = {}
            return Reply(body=anthropic_message(tool_input=answer, tool_name=name))
        try:
            return super().answer(req)
        except Exception:
            return Reply(body=openai_completion("{}", model=req.body.get("model", "scripted")))


def _scratch(root: Path) -> Path:
    """A folder laid out like a fresh clone for the commands: the repository's data read
    through links, ``reports/`` and the cassettes folder its own (a write replaces a link,
    never its target)."""
    root.mkdir()
    shutil.copy(ROOT / "run_eval.py", root / "run_eval.py")
    for name in ("datasets", "prompts", ".ci"):
        (root / name).symlink_to(ROOT / name)
    cassettes = root / "tests" / "cassettes"
    cassettes.mkdir(parents=True)
    for f in (ROOT / "tests" / "cassettes").iterdir():
        (cassettes / f.name).symlink_to(f)
    shutil.copytree(ROOT / "reports" / "baselines", root / "reports" / "baselines")
    shutil.copy(ROOT / ".ci" / "gates.toml", root / "gates.toml")
    conv = [
        {"role": "user", "content": "Hi, I'm Tim. I like coffee."},
        {"role": "assistant", "name": "John", "content": "I'm a nurse in Berlin."},
    ]
    (root / "conv.json").write_text(json.dumps(conv), encoding="utf-8")
    (root / "l1.txt").write_text("[user]: Hi, I'm Tim.\n[John]: I'm a nurse.\n", encoding="utf-8")
    from tests.harness.datasets.test_locomo import conversation, second

    with zipfile.ZipFile(root / "locomo10.zip", "w") as z:
        for key, conv_data in {"26": conversation(), "30": second()}.items():
            z.writestr(f"data/multimodal_dialog/locomo10_v2/{key}.json", json.dumps(conv_data))
    return root


def _run(args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    # The systems' virtualenvs of the checkout (made by the tests before), not new ones.
    systems = os.environ.get("HY_EVAL_SYSTEMS_DIR") or str(ROOT / ".hy_eval" / "systems")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HY_EVAL_CACHE": "",
        "HY_EVAL_SYSTEMS_DIR": systems,
    }
    env.pop("HY_EVAL_CACHE")
    env.pop("OPENAI_API_KEY", None)
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run(
        ["bash", "-c", args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The scratch clone, the model server, and the placeholders' files and folders."""
    root = _scratch(tmp_path_factory.mktemp("docs") / "clone")
    model = DocsModel(load_suite("multi_speaker").cases)
    model.server = LoopbackServer(model.answer, batch=BatchScript(polls=1))
    model.server.start()
    replay = root / "replay.sqlite"
    systems = root / "systems.sqlite"
    py = f"{sys.executable} run_eval.py"
    for cache, files in (
        (replay, [CASSETTE]),
        (
            systems,
            sorted(
                str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "cassettes").glob("*.jsonl")
            ),
        ),
    ):
        for f in files:
            done = _run(f"{py} cassette import {f} --cache {cache}", root)
            assert done.returncode == 0, done.stderr
    for name in ("RUN_A", "RUN_B", "RUN_C"):
        done = _run(
            f"{py} --suite multi_speaker --sample 2 --cache-mode replay-only --cache {replay} "
            f"--quiet --out reports/{name}",
            root,
        )
        assert done.returncode == 0, done.stderr
    values = {
        "openai": model.server.openai_url,
        "anthropic": model.server.anthropic_url,
        "replay": str(replay),
        "systems": str(systems),
        "scratch": str(root),
    }
    yield root, values
    model.server.stop()


def _placeholders(command: str, root: Path, values: dict[str, str]) -> str:
    """The command with its placeholders made real (run folders, files, a cache key)."""
    cache = root / ".hy_eval" / "cache.sqlite"
    key = ""
    if cache.exists():
        import sqlite3

        with sqlite3.connect(cache) as db:
            row = db.execute("SELECT key FROM answers LIMIT 1").fetchone()
        key = row[0][:12] if row else ""
    table = {
        "[SUITE]": "",
        "[--rates RUN]": "--rates reports/RUN_A",
        "[--cassette FILE]": "",
        "[--run RUN_DIR]": "--run reports/RUN_A",
        "reports/RUN_A": "reports/RUN_A",
        "reports/RUN_B": "reports/RUN_B",
        "RUN_A": "reports/RUN_A",
        "RUN_B": "reports/RUN_B",
        "RUN_C": "reports/RUN_C",
        "RUN_DIR": "reports/RUN_A",
        "--out DIR": f"--out {root}/table",
        "A.jsonl": "datasets/matcher_pairs/judge_a.jsonl",
        "B.jsonl": "datasets/matcher_pairs/judge_b.jsonl",
        "KEYPREFIX": key,
        "--cache CACHE": f"--cache {values['replay']}",
    }
    for old, new in table.items():
        command = re.sub(rf"(?<![\w/]){re.escape(old)}(?![\w])", new, command)
    return command.replace("python run_eval.py", f"{sys.executable} run_eval.py")


def _serve(command: str, root: Path) -> None:
    """A server command: started, its first line read (the URL it serves), stopped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        ["bash", "-c", "exec " + command],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("http://127.0.0.1:"), (
            first,
            proc.stderr.read() if proc.poll() else "",
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@pytest.mark.parametrize(("doc", "command"), commands(), ids=lambda v: v[:60])
def test_the_command_runs_as_documented(doc, command, scratch):
    root, values = scratch
    how = HOW.get(command)
    assert how is not None, f"{doc}: {command!r} is not in HOW"
    if how.kind == "skip":
        return  # said why in HOW; checked by the first test
    for old, new in how.replace.items():
        command = command.replace(old, new.format(**values))
    line = _placeholders(command, root, values)
    if how.append:
        unique = tempfile.mkdtemp(dir=root, prefix="out-") + "/run"  # a folder of its own
        line += " " + how.append.format(**values, unique=unique)
    if how.kind == "server":
        _serve(line, root)
        return
    done = _run(line, root)
    said = f"{doc}: {line}\nexit {done.returncode}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
    assert "Traceback" not in done.stderr, said
    assert done.returncode == how.code, said

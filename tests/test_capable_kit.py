"""reports/capable/kit.py: a batch request file split for an offline answerer, and its
answers joined into a results file the folder vendor reads as the openai provider's
answers (docs/capable.md)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from hy_eval.llm.batch._vendors import openai_result

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "reports" / "capable" / "kit.py"
SCHEMA = {"type": "object", "properties": {"same": {"type": "boolean"}}, "required": ["same"]}


class _Provider:
    structured = "json_schema"
    model = "claude"


def _request(n: int, schema: dict | None = SCHEMA) -> dict:
    body = {
        "model": "claude",
        "messages": [
            {"role": "system", "content": "You judge facts."},
            {"role": "user", "content": f"Pair {n}"},
        ],
    }
    if schema:
        body["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
    return {"custom_id": f"key{n}", "method": "POST", "url": "/v1/chat/completions", "body": body}


def _kit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(KIT), *args], capture_output=True, text=True, cwd=tmp_path
    )


def test_split_then_join_gives_results_the_provider_reads(tmp_path):
    requests = tmp_path / "hy-x.requests.jsonl"
    rows = [_request(0), _request(1), _request(2, schema=None)]
    requests.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert _kit(tmp_path, "split", str(requests), "kit", "--parts", "2").returncode == 0
    part1 = (tmp_path / "kit" / "part1" / "requests.md").read_text(encoding="utf-8")
    # The system message is written once and named; each request's user message shown.
    assert part1.count("You judge facts.") == 1 and "Pair 0" in part1 and "Pair 1" in part1
    assert "Pair 2" in (tmp_path / "kit" / "part2" / "requests.md").read_text(encoding="utf-8")
    (tmp_path / "kit" / "part1" / "answers.jsonl").write_text(
        '{"item": 0, "answer": {"same": true}}\n{"item": 1, "error": "cannot tell"}\n',
        encoding="utf-8",
    )
    (tmp_path / "kit" / "part2" / "answers.jsonl").write_text(
        '{"item": 2, "text": "free words"}\n', encoding="utf-8"
    )
    done = _kit(tmp_path, "join", str(requests), "kit")
    assert done.returncode == 0, done.stderr
    assert "3 answers, 0 requests unanswered" in done.stdout
    lines = (tmp_path / "hy-x.results.jsonl").read_text(encoding="utf-8").splitlines()
    results = {r.key: r for r in (openai_result(line, _Provider()) for line in lines)}
    assert results["key0"].outcome == "succeeded"
    assert json.loads(results["key0"].completion.text) == {"same": True}
    assert results["key1"].outcome == "failed" and "cannot tell" in results["key1"].reason
    assert '"content": "free words"' in lines[2]


def test_join_refuses_an_item_answered_twice(tmp_path):
    requests = tmp_path / "hy-y.requests.jsonl"
    requests.write_text(json.dumps(_request(0)) + "\n", encoding="utf-8")
    (tmp_path / "kit" / "part1").mkdir(parents=True)
    (tmp_path / "kit" / "part1" / "answers.jsonl").write_text(
        '{"item": 0, "answer": {"same": true}}\n{"item": 0, "answer": {"same": false}}\n',
        encoding="utf-8",
    )
    done = _kit(tmp_path, "join", str(requests), "kit")
    assert done.returncode == 1 and "item 0 unknown or answered twice" in done.stderr
    assert not (tmp_path / "hy-y.results.jsonl").exists()


def test_kit_is_a_script_with_a_docstring():
    spec = importlib.util.spec_from_file_location("kit", KIT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "docs/capable.md" in module.__doc__

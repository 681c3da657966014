"""Hand an offline batch's request file to an answerer who sees nothing else, and turn the
answers into the batch's results file (docs/capable.md).

    python reports/capable/kit.py split BATCH.requests.jsonl KITDIR --parts 4
    python reports/capable/kit.py join BATCH.requests.jsonl KITDIR

``split`` writes ``KITDIR/part<k>/requests.md``: each request numbered (its item), its
system message (written once per distinct text and named S1, S2, ... so a part stays
readable), its user message, and the JSON Schema its answer must meet. The answerer
writes ``KITDIR/part<k>/answers.jsonl``, one line a request:
``{"item": 7, "answer": {...}}`` (the JSON object the request asks for),
``{"item": 7, "text": "..."}`` (a request that asks for free text, as a system's own
prompts may), or ``{"item": 7, "error": "why"}`` (a request it cannot answer).

``join`` reads every part's answers and writes ``BATCH.results.jsonl`` beside the request
file in OpenAI Batch's output format: an answer becomes a chat completion whose content is
the answer as written (never edited); an error line becomes an error line, which the run
counts as that request's failure. An item answered twice, an unknown item or a line that is
no JSON stops the join with one line naming it; a request no line answers is left out (the
run asks it again next round).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read_requests(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _schema_of(body: dict) -> dict | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return fmt["json_schema"]["schema"]
    return None


def split(requests_path: Path, kit: Path, parts: int) -> None:
    numbered = list(enumerate(read_requests(requests_path)))
    size = -(-len(numbered) // parts)
    for k in range(parts):
        chunk = numbered[k * size : (k + 1) * size]
        if not chunk:
            break
        systems: dict[str, str] = {}
        schemas: dict[str, str] = {}
        body_lines: list[str] = []
        for item, req in chunk:
            messages = req["body"]["messages"]
            system = next((m["content"] for m in messages if m["role"] == "system"), "")
            user = "\n\n".join(m["content"] for m in messages if m["role"] == "user")
            sname = systems.setdefault(system, f"S{len(systems) + 1}")
            schema = _schema_of(req["body"])
            shape = json.dumps(schema, ensure_ascii=False) if schema else "free text"
            qname = schemas.setdefault(shape, f"J{len(schemas) + 1}")
            body_lines += [
                f"## Request {item}",
                f"System message: {sname}. Answer format: {qname}.",
                "User message:",
                "````",
                user,
                "````",
                "",
            ]
        head = [f"# {len(chunk)} requests", ""]
        for text, name in systems.items():
            head += [f"## System message {name}", "````", text, "````", ""]
        for shape, name in schemas.items():
            head += [f"## Answer format {name}", "````", shape, "````", ""]
        out = kit / f"part{k + 1}"
        out.mkdir(parents=True, exist_ok=True)
        (out / "requests.md").write_text("\n".join(head + body_lines), encoding="utf-8")
        print(f"{out / 'requests.md'}: items {chunk[0][0]}..{chunk[-1][0]}")


def _completion(req: dict, content: str) -> dict:
    return {
        "id": f"chatcmpl-{req['custom_id'][:16]}",
        "object": "chat.completion",
        "created": 0,
        "model": req["body"]["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def join(requests_path: Path, kit: Path) -> int:
    requests = read_requests(requests_path)
    answers: dict[int, dict] = {}
    for path in sorted(kit.glob("part*/answers.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                item = int(row["item"])
            except (ValueError, KeyError, TypeError) as exc:
                sys.exit(f"kit: {path}:{n}: not an answer line ({exc})")
            if not 0 <= item < len(requests) or item in answers:
                sys.exit(f"kit: {path}:{n}: item {item} unknown or answered twice")
            answers[item] = row
    out_lines = []
    for item, row in sorted(answers.items()):
        req = requests[item]
        if "error" in row:
            error = {"code": "answerer_error", "message": str(row["error"])}
            out_lines.append({"custom_id": req["custom_id"], "response": None, "error": error})
            continue
        content = row["text"] if "text" in row else json.dumps(row["answer"], ensure_ascii=False)
        response = {"status_code": 200, "body": _completion(req, content)}
        out_lines.append({"custom_id": req["custom_id"], "response": response, "error": None})
    results = requests_path.with_name(requests_path.name.replace(".requests.", ".results."))
    tmp = results.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in out_lines), "utf-8")
    tmp.replace(results)
    missing = len(requests) - len(answers)
    print(f"{results}: {len(answers)} answers, {missing} requests unanswered")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split")
    s.add_argument("requests", type=Path)
    s.add_argument("kit", type=Path)
    s.add_argument("--parts", type=int, default=1)
    j = sub.add_parser("join")
    j.add_argument("requests", type=Path)
    j.add_argument("kit", type=Path)
    args = parser.parse_args()
    if args.cmd == "split":
        split(args.requests, args.kit, max(1, args.parts))
        return 0
    return join(args.requests, args.kit)


if __name__ == "__main__":
    sys.exit(main())

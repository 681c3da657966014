"""A memory system for the tests of the worker seam, speaking the worker protocol
(docs/systems.md) with the standard library only. It keeps its store in a dict, asks the
model behind HY_EVAL_BASE_URL once per case and does what the answer says:

    {"facts": [{"text": ..., "owner": ...}], "update": {"m1": "new text"}, "delete": ["m1"]}

A case whose label names a failure acts it: ``die`` exits, ``garbage`` writes a line that
is not JSON, ``hang`` never answers, ``refuse`` answers ``ok: false``. With FAKE_SWALLOW set, a model call answered with an
error is swallowed and the case finishes without its answer, as some SDKs do.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

MEASURES = [m for m in os.environ.get("FAKE_MEASURES", "owner").split(",") if m]


def say(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def ask_model(messages):
    body = json.dumps(
        {
            "model": os.environ["HY_EVAL_MODEL"],
            "messages": [{"role": "user", "content": json.dumps(messages, ensure_ascii=False)}],
        }
    ).encode()
    req = urllib.request.Request(
        os.environ["HY_EVAL_BASE_URL"] + "/chat/completions",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + os.environ["HY_EVAL_API_KEY"],
        },
    )
    with urllib.request.urlopen(req, timeout=60) as answer:
        return json.loads(json.load(answer)["choices"][0]["message"]["content"])


def run_case(req):
    label = req["label"]
    if "die" in label:
        sys.exit(3)
    if "garbage" in label:
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
        return None
    if "hang" in label:
        time.sleep(3600)
    if "refuse" in label:
        return {"ok": False, "error": "the fake refused"}
    store = {f"e-{m['id']}": {"text": m["text"], "owner": m.get("owner")} for m in req["existing"]}
    existing_ids = {m["id"]: f"e-{m['id']}" for m in req["existing"]}
    before = [{"id": k, "status": "active", **v} for k, v in store.items()]
    try:
        plan = ask_model(req["messages"])
    except urllib.error.HTTPError as exc:  # the model server's error answer: case failed
        if os.environ.get("FAKE_SWALLOW"):  # as some SDKs do: go on without the answer
            plan = {}
        else:
            return {"ok": False, "error": f"model call failed: {exc}: {exc.read()[:300]!r}"}
    for mid, text in plan.get("update", {}).items():
        store[existing_ids[mid]]["text"] = text
    for mid in plan.get("delete", []):
        del store[existing_ids[mid]]
    for n, fact in enumerate(plan.get("facts", [])):
        store[f"n-{n}"] = {"text": fact["text"], "owner": fact.get("owner")}
    user = next((m.get("name") for m in req["messages"] if m["role"] == "user"), None)
    return {
        "ok": True,
        "existing_ids": existing_ids,
        "before": before,
        "after": [{"id": k, "status": "active", "supersedes": [], **v} for k, v in store.items()],
        "profile": {"name": user} if "profile" in MEASURES else None,
        "operations_raw": [] if "operations_raw" in MEASURES else None,
        "calls": 1,
        "trace": {"plan": plan},
    }


def main():
    say({"ready": True, "system": "fake", "version": "0", "measures": MEASURES})
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "quit":
            return
        answer = run_case(req)
        if answer is not None:
            say(answer)


if __name__ == "__main__":
    main()

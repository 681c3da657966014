"""A stand-in for hy_eval/llm/_llama_worker.py that speaks its pipe protocol with scripted
answers, so that the local provider's process handling is tested without llama.cpp.

Run as ``fake_llama_worker.py PLAN.json N_CTX``; the "model file" is a plan:
``{"crash_at": K, "marker": PATH, "signal": 11, "exit_code": null}``. On its K-th request
it kills itself with the signal (or exits with ``exit_code``), unless ``marker`` exists
(it creates the marker first, so that a resumed run's new process does not crash again).
Requests containing "BAD-REQUEST" get the worker's error answer. With ``"slow_from": K``
every request from the K-th on (to the ``slow_until``-th, if given) takes ``slow_s``
seconds (default 60), after touching
``slow_marker`` when given: a model call in progress that a test can interrupt."""

import json
import os
import signal
import sys
import time

EXTRACTION = {"facts": [{"text": "The user likes coffee.", "owner": "user"}], "basic_info": {}}


def main():
    with open(sys.argv[1], encoding="utf-8") as fh:
        plan = json.load(fh)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for served, line in enumerate(iter(sys.stdin.readline, ""), start=1):
        marker = plan.get("marker")
        if served == plan.get("crash_at") and not (marker and os.path.exists(marker)):
            if marker:
                open(marker, "w").close()
            if plan.get("exit_code") is not None:
                sys.exit(plan["exit_code"])
            os.kill(os.getpid(), plan.get("signal", signal.SIGSEGV))
        slow_until = plan.get("slow_until", served)
        if plan.get("slow_from") is not None and plan["slow_from"] <= served <= slow_until:
            if plan.get("slow_marker"):
                open(plan["slow_marker"], "w").close()
            time.sleep(plan.get("slow_s", 60))
        request = json.loads(line)
        if "BAD-REQUEST" in line:
            reply = {"error": "bad_request", "message": "ValueError: too long"}
        else:
            schema = request.get("schema") or {}
            answer = (
                {"operations": []} if "operations" in schema.get("properties", {}) else EXTRACTION
            )
            reply = {
                "text": json.dumps(answer),
                "finish_reason": "stop",
                "prompt_tokens": 10,
                "completion_tokens": 5,
                "served": served,
                "pid": os.getpid(),
            }
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()

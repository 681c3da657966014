"""A stand-in for hy_eval/llm/local/_llama_worker.py that speaks its pipe protocol with scripted
answers, so that the local provider's process handling is tested without llama.cpp.

Run as ``fake_llama_worker.py PLAN.json N_CTX THREADS SLOTS``; the "model file" is a plan:
``{"crash_at": K, "marker": PATH, "signal": 11, "exit_code": null}``. On its K-th request
it kills itself with the signal (or exits with ``exit_code``), unless ``marker`` exists
(it creates the marker first, so that a resumed run's new process does not crash again).
Requests containing "BAD-REQUEST" get the worker's error answer. With ``"slow_from": K``
every request from the K-th on (to the ``slow_until``-th, if given) takes ``slow_s``
seconds (default 60), after touching
``slow_marker`` when given: a model call in progress that a test can interrupt.

Every reply carries its request's ``id``. With ``"reverse": N`` the requests are answered
N at a time, in the reverse of the order they came in (out-of-order replies). With
``"echo": true`` a reply's text is a JSON object saying what the request's last message
said (``said``), the worker's arguments after the plan (``argv``) and the request's
number (``served``), instead of the scripted extraction. With ``"garbage_at": K`` the
K-th request's reply is a line that is not JSON; with ``"stray": true`` every reply is
preceded by one with id 0, which no request has."""

import json
import os
import signal
import sys
import time

EXTRACTION = {"facts": [{"text": "The user likes coffee.", "owner": "user"}], "basic_info": {}}


def reply_to(plan, served, line):
    request = json.loads(line)
    if served == plan.get("garbage_at"):
        return "not a reply"
    if "BAD-REQUEST" in line:
        return {"id": request["id"], "error": "bad_request", "message": "ValueError: too long"}
    if plan.get("echo"):
        said = request["messages"][-1]["content"]
        answer = {"said": said, "argv": sys.argv[2:], "served": served}
    else:
        schema = request.get("schema") or {}
        operations = "operations" in schema.get("properties", {})
        answer = {"operations": []} if operations else EXTRACTION
    return {
        "id": request["id"],
        "text": json.dumps(answer),
        "finish_reason": "stop",
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "served": served,
        "pid": os.getpid(),
    }


def follow_plan(plan, served):
    """The plan's crash or slowness for the ``served``-th request, if any."""
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


def main():
    with open(sys.argv[1], encoding="utf-8") as fh:
        plan = json.load(fh)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    held = []  # with "reverse": the replies not sent yet

    def send(replies):
        for reply in replies:
            if plan.get("stray"):
                out.write(json.dumps({"id": 0, "text": "nobody asked"}) + "\n")
            out.write((reply if isinstance(reply, str) else json.dumps(reply)) + "\n")
        out.flush()

    for served, line in enumerate(iter(sys.stdin.readline, ""), start=1):
        follow_plan(plan, served)
        held.append(reply_to(plan, served, line))
        if len(held) >= plan.get("reverse", 1):
            send(reversed(held))
            held.clear()
    send(reversed(held))


if __name__ == "__main__":
    main()

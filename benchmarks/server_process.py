"""The benchmarks' model server in a process of its own, as a real server would be: the
loopback server (OpenAI wire format) answering every call after a fixed delay with one
scripted answer per stage. Sharing the benchmarked process would make the server's own
request handling compete with the harness for one interpreter lock; both the floor and the
harness are measured against this same process.

    with ServerProcess(delay=0.1) as server:
        server.openai_url, server.count   # count: requests answered so far, asked of it
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

EXTRACT = json.dumps(
    {"facts": [{"text": "The user likes coffee.", "owner": "user"}], "basic_info": {}}
)
RECONCILE = json.dumps({"operations": [{"op": "ADD", "fact": 0, "target_ids": [], "text": ""}]})
_COUNT_PATH = "/count"


def _serve(delay: float) -> None:
    import time

    sys.path.insert(0, str(ROOT))
    from tests.loopback import LoopbackServer, Reply, openai_completion

    bodies = {
        "memory_extraction": openai_completion(EXTRACT),
        "memory_reconcile": openai_completion(RECONCILE),
        None: openai_completion("{}"),
    }

    def script(req: Any) -> Any:
        if req.path == _COUNT_PATH:
            return Reply(body={"count": req.index})  # requests before this one
        rf = (req.body or {}).get("response_format") or {}
        name = (rf.get("json_schema") or {}).get("name")
        return Reply(body=bodies.get(name, bodies[None]), delay=delay)

    with LoopbackServer(script) as server:
        print(server.openai_url, flush=True)
        while True:
            time.sleep(3600)


class ServerProcess:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._proc: subprocess.Popen[str] | None = None
        self.openai_url = ""
        self._counted = 0  # /count requests made so far (each is a request too)

    def __enter__(self) -> ServerProcess:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, str(self.delay)], stdout=subprocess.PIPE, text=True
        )
        assert self._proc.stdout is not None
        self.openai_url = self._proc.stdout.readline().strip()
        if not self.openai_url:
            raise RuntimeError("the benchmark server did not start")
        return self

    @property
    def count(self) -> int:
        """Model requests the server has received (its own count requests left out)."""
        base = self.openai_url.rsplit("/v1", 1)[0]
        req = urllib.request.Request(base + _COUNT_PATH, data=b"{}", method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            seen = int(json.loads(resp.read())["count"])
        count = seen - self._counted
        self._counted += 1
        return count

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)


if __name__ == "__main__":
    _serve(float(sys.argv[1]))

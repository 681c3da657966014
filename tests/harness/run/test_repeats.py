"""--repeats N: distinct cache keys per repeat, flaky cases listed, k-of-n passing, spread."""

import json
import threading

from hy_eval.cli import main
from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel, model_args


class OnceBroken(SuiteModel):
    """Answers t-01's second extraction request wrongly; everything else perfectly."""

    def __init__(self, cases):
        super().__init__(cases)
        self.seen = {}
        self.lock = threading.Lock()
        self.extract_requests = 0

    def answer(self, req):
        name = ((req.body.get("response_format") or {}).get("json_schema") or {}).get("name")
        if name == "memory_extraction":
            case_id = self.case_of(req.messages[-1]["content"])
            with self.lock:
                self.extract_requests += 1
                self.seen[case_id] = self.seen.get(case_id, 0) + 1
                nth = self.seen[case_id]
            if case_id == "t-01" and nth == 2:
                from tests.loopback import Reply, openai_completion

                wrong = {
                    "facts": [{"text": "John likes coffee #1.", "owner": "user"}],
                    "basic_info": {},
                }
                return Reply(body=openai_completion(json.dumps(wrong)))
        return super().answer(req)


def test_repeats_flaky_and_k_of_n(tmp_path, capsys):
    suite = write_suite(tmp_path / "toy", 4)
    with OnceBroken(suite.cases) as model:
        args = [
            "--suite",
            str(tmp_path / "toy"),
            *model_args(model.server),
            "--cache",
            str(tmp_path / "c.sqlite"),
            "--repeats",
            "3",
            "--temperature",
            "0.7",
            "--quiet",
            "--concurrency",
            "1",
        ]
        assert main([*args, "--out", str(tmp_path / "all")]) == 0
        assert model.extract_requests == 12  # same conversation, three distinct cache keys
        assert {r.body["temperature"] for r in model.server.requests} == {0.7}
        out = capsys.readouterr().out
        assert "repeats: 3 per case, a case passes with 3 of 3" in out and "flaky: t-01" in out
        # The same run again with k=2 of 3: all from the cache, t-01 now passes.
        before = model.server.count
        assert main([*args, "--pass-k", "2", "--out", str(tmp_path / "k2")]) == 0
        assert model.server.count == before
    all3 = json.loads((tmp_path / "all" / "summary.json").read_text())
    k2 = json.loads((tmp_path / "k2" / "summary.json").read_text())
    assert all3["repeats"]["flaky_cases"] == ["t-01"]
    assert all3["metrics"]["case_pass"]["value"] == 0.75
    assert k2["metrics"]["case_pass"]["value"] == 1.0
    assert all3["repeats"]["pass_rate"] == 11 / 12
    spread = all3["repeats"]["spread"]["attribution_accuracy"]
    assert sorted(spread["per_repeat"]) == [0.75, 1.0, 1.0] and spread["min"] == 0.75
    lines = (tmp_path / "all" / "cases.jsonl").read_text().splitlines()
    assert sorted((json.loads(x)["id"], json.loads(x)["repeat"]) for x in lines) == sorted(
        (c.id, r) for c in suite.cases for r in range(3)
    )

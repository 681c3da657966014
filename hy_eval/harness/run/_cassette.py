"""Recording a cassette: the suite run once with the read-write cache, every answer it
asked exported to a JSON-lines file that CI imports and replays (docs/ci.md)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hy_eval._exitcodes import ExitCode
from hy_eval._files import replace_file
from hy_eval.harness.run._config import RunConfig
from hy_eval.harness.run._plan import RunError
from hy_eval.harness.run._runner import Runner, local_machine
from hy_eval.llm import AnswerCache, ModelOptions, export_cassette
from hy_eval.llm.cache import sidecar


def record_cassette(
    options: ModelOptions,
    suite: str,
    variant: str,
    out_path: Path,
    *,
    system: str = "hy_eval",
    sample: int | None = None,
    case_filter: str | None = None,
) -> tuple[int, int]:
    """Run ``suite`` with ``variant`` through ``system`` on the model ``options`` name (its
    cache read and written; ``sample``: that many cases spread over the suite;
    ``case_filter``: run's ``--filter``) and write
    the answers the run used to ``out_path``: (answers, cases). Raises ``RunError`` when
    the run cannot start or a model call failed (a cassette with holes would fail every
    replay); nothing is written then. An external system may fail a case on its own (its
    answer unusable to it): that case replays the same, so it is no hole."""
    external = system != "hy_eval"
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig.of(
            options,
            suite=suite,
            system=system,
            sample=sample,
            filter=case_filter,
            variant=variant,
            out=str(Path(tmp) / "run"),
            # Every answer must be asked of the cache, to be exported.
            reuse=False,
            max_error_rate=1.0 if external else 0.0,
        )
        runner = Runner(config)
        _, summary, code = runner.run()
    client = runner.answer_client()
    if code != ExitCode.OK or client is None or client.stats.errors or not options.cache_path:
        raise RunError("the recording run had provider errors; nothing written", ExitCode.PROVIDER)
    answers = export_cassette(AnswerCache(options.cache_path), client.keys_used, out_path)
    machine = local_machine(client)
    if machine is not None:  # the embedded model's answers depend on the machine
        replace_file(sidecar(out_path), json.dumps(machine, indent=1) + "\n")
    return answers, summary.cases

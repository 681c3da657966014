"""The runs a comparison reads (rule E4): each run folder's records, checked and counted
per case (``RunOutcomes``: counts, verdicts, the outputs a diff looks at, the slim
records consistency needs), and which prompt files differ between two runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hy_eval.harness.analysis._aggregate import RecordRows, case_counts, case_table
from hy_eval.harness.runlog import (
    Baseline,
    CaseRecord,
    PerturbFile,
    RunFolderError,
    RunManifest,
    ScoreCheck,
    ScoreRecord,
    read_perturb_file,
    read_run,
)


class CompareError(ValueError):
    """Two runs that cannot be compared (different datasets, nothing in common)."""


@dataclass
class RunOutcomes:
    """Per-case metric counts and outputs of one run (or one baseline)."""

    label: str
    dataset_hash: str
    counts: dict[str, dict[str, tuple[float, float]]]  # case id -> metric -> (num, den)
    passed: dict[str, bool]
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The run's manifest, or the baseline itself.
    meta: RunManifest | Baseline | None = None
    #: Each record slimmed to its id, repeat, rules, tags and checks (``slim_record``),
    #: for consistency; empty for a baseline.
    checks: list[CaseRecord] = field(default_factory=list)
    #: ``perturb.json`` of a perturbed run, else None.
    perturbation: PerturbFile | None = None
    #: Metrics the run's system under test cannot expose (its records say so).
    not_measured: frozenset[str] = frozenset()

    @property
    def matcher(self) -> str:
        """The matcher that paired the run's facts (``keyword`` when nothing says)."""
        return self.meta.matcher if self.meta is not None else "keyword"


def outputs_of(record: CaseRecord) -> dict[str, Any]:
    """The parts of a case record a structural diff looks at."""
    return {
        "facts": [(f["text"], f.get("owner")) for f in record.facts],
        "operations": [
            (o["op"], o["fact"], tuple(o["targets"])) for o in record.operations.get("applied", [])
        ],
        "basic_info": record.basic_info if "basic_info" in record.model_fields_set else {},
        "error": record.error,
    }


def run_outcomes(run_dir: str | Path) -> RunOutcomes:
    """The per-case counts, verdicts (k of n repeats, the run's ``--pass-k``) and outputs
    of the run in ``run_dir``, read through ``runlog`` and counted by ``_aggregate``."""
    from hy_eval.harness.analysis._compare_input import checked_records

    rows = RecordRows()
    outputs: dict[str, dict[str, Any]] = {}
    checks: list[CaseRecord] = []
    unmeasured: set[str] = set()
    try:  # a run folder is input: a bad record is one line naming it, not a traceback
        run = read_run(run_dir)
        for rec in checked_records(run.records_path):
            rows.add(rec)
            checks.append(slim_record(rec))
            unmeasured.update(rec.score.not_measured or ())
            if rec.repeat == 0:
                outputs[rec.id] = outputs_of(rec)
        perturbation = read_perturb_file(Path(run_dir))
    except RunFolderError as exc:
        raise CompareError(str(exc)) from None
    manifest = run.manifest
    table = case_table(rows, manifest.params.pass_k)
    counts = case_counts(table) if len(rows) else {}
    passed = dict(zip(table["id"], map(bool, table["passed"]), strict=True)) if len(rows) else {}
    return RunOutcomes(
        manifest.label,
        manifest.dataset_hash,
        counts,
        passed,
        outputs,
        manifest,
        checks,
        perturbation,
        frozenset(unmeasured),
    )


def slim_record(rec: CaseRecord) -> CaseRecord:
    """What consistency needs of a record: its keys, language, rules, tags, check verdicts
    (without their details), facts and the metrics its system cannot measure."""
    score = rec.score
    checks = [ScoreCheck(check=c.check, ok=c.ok) for c in score.checks]
    return CaseRecord(
        id=rec.id,
        repeat=rec.repeat,
        lang=rec.lang,
        rules=rec.rules,
        tags=rec.tags,
        score=ScoreRecord(
            passed=score.passed,
            checks=checks,
            facts=score.facts,
            not_measured=score.not_measured,
        ),
    )


def prompts_changed(a: RunOutcomes, b: RunOutcomes) -> list[str] | None:
    """The prompt files whose hash differs between the runs (or that one run alone used),
    by the file name without its variant folder (``extract.en.j2``); None when either side
    has no prompt hashes (an old run, or a baseline written without them)."""
    ha = getattr(a.meta, "prompt_hashes", None)
    hb = getattr(b.meta, "prompt_hashes", None)
    if not ha or not hb:
        return None

    def by_file(hashes: dict[str, str]) -> dict[str, str]:
        # A variant's file that extends default's is one prompt with both files' hashes.
        out: dict[str, list[str]] = {}
        for name, digest in hashes.items():
            out.setdefault(name.rsplit("/", 1)[-1], []).append(digest)
        return {name: " ".join(sorted(digests)) for name, digests in out.items()}

    fa, fb = by_file(ha), by_file(hb)
    return sorted(f for f in set(fa) | set(fb) if fa.get(f) != fb.get(f))

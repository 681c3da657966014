"""Metamorphic runs: a suite run as it is and under perturbations
(``datasets/_perturb.py``).

``run --perturb rename,order`` runs the base suite into the run folder, then each
perturbation into ``RUN/perturb/<name>/`` (a run folder of its own, its manifest's
``params.perturb`` naming the perturbation, ``perturb.json`` listing the skipped cases and
each case's subject map). The base run's ``summary.json`` gets a ``perturbations`` section
and ``report.md`` a section per perturbation (``report/_perturbed.py``); the consistency
itself is computed in ``analysis/_consistency.py``. ``hy-eval compare RUN
RUN/perturb/<name>`` shows the same consistency; docs/metrics.md defines it.
"""

from __future__ import annotations

from pathlib import Path

from hy_eval._files import LinkRefused, private_dir
from hy_eval.harness.analysis import perturbation_section
from hy_eval.harness.datasets import load_suite, perturb_suite, select_cases
from hy_eval.harness.report import add_perturbations
from hy_eval.harness.run._config import RunConfig
from hy_eval.harness.run._plan import RunError
from hy_eval.harness.runlog import (
    PerturbationSection,
    PerturbFile,
    RunFolderError,
    RunSummary,
    write_perturb_file,
)


def run_with_perturbations(
    config: RunConfig, names: list[str], seed: int = 0
) -> tuple[Path, RunSummary, int]:
    """The base run, then one run per perturbation under ``RUN/perturb/<name>/``; the
    base's summary.json and report.md get the perturbations' sections. Each perturbed
    folder is resumed when it holds records already. A perturbed folder whose files
    cannot be read (edited by hand between a run and its resume) is a ``RunError`` naming
    the file, as every unreadable run folder is one line (E2)."""
    from hy_eval.harness.run._runner import Runner

    runner = Runner(config)
    run_dir, summary, code = runner.run()
    config = runner.config  # a resume's: the suite and selection the manifest names
    suite = load_suite(config.suite)
    refs = select_cases(suite.refs, config.filter, config.sample, config.limit)
    sections: dict[str, PerturbationSection] = {}
    for name in names:
        sub_dir = run_dir / "perturb" / name
        ps = perturb_suite(suite, refs, name, seed)
        _perturb_folder(run_dir, name)
        cases = {cid: {"subjects": p.subjects, "note": p.note} for cid, p in ps.results.items()}
        info = {"perturbation": name, "seed": seed, "skipped": ps.skipped, "cases": cases}
        write_perturb_file(sub_dir, PerturbFile.model_validate(info))
        if ps.refs:
            resume = (sub_dir / "cases.jsonl").exists()
            sub = config.model_copy(
                update={
                    "out": None if resume else str(sub_dir),
                    "resume": str(sub_dir) if resume else None,
                    "perturb": name,
                    "perturb_seed": seed,
                }
            )
            try:
                _, _, sub_code = Runner(sub).run()
            except RunError as exc:
                raise RunError(str(exc), exc.exit_code, perturbation=name) from None
            code = max(code, sub_code)
        try:
            sections[name] = perturbation_section(run_dir, summary, sub_dir)
        except RunFolderError as exc:
            raise RunError(str(exc), perturbation=name) from None
    add_perturbations(run_dir, summary, sections)
    return run_dir, summary, code


def _perturb_folder(run_dir: Path, name: str) -> Path:
    """``RUN/perturb/<name>/`` made (0700), each level refused when it is a symbolic link:
    a copied run folder could point ``perturb`` anywhere, and the perturbed run's files
    would be renamed into that folder."""
    try:
        private_dir(run_dir / "perturb")
        return private_dir(run_dir / "perturb" / name)
    except LinkRefused as exc:
        raise RunError(str(exc), perturbation=name) from None

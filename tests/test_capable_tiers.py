"""reports/capable/tiers.py: both models on both tiers as tables read from run
summaries, figures as the runs wrote them (docs/datasets.md)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("tiers", ROOT / "reports" / "capable" / "tiers.py")
assert spec and spec.loader
tiers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tiers)


def _entry(num, den):
    return {"value": num / den, "num": num, "den": den, "ci": [0, 1]}


def _run(folder, model, pass_num, attr_num):
    metrics = {"case_pass": _entry(pass_num, 4), "attribution_accuracy": _entry(attr_num, 10)}
    summary = {
        "model": model,
        "suite": "s",
        "cases": 4,
        "metrics": metrics,
        "breakdown": {
            "lang": {"en": metrics},
            "rule": {"A2": {"fact_recall": _entry(3, 5)}, "R1": {}},
        },
    }
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    return f"{model} tier={folder}"


def test_tables_carry_each_runs_figures_with_units(tmp_path, capsys):
    a = _run(tmp_path / "a", "claude", 3, 9)
    b = _run(tmp_path / "b", "SmolLM2", 1, 5)
    assert tiers.main([a, b, "--json", str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    assert "| claude tier | claude | 4 | 0.750 (3/4) | – | 0.900 (9/10) |" in out
    assert "| SmolLM2 tier | SmolLM2 | 4 | 0.250 (1/4) | – | 0.500 (5/10) |" in out
    assert "| en | attribution_accuracy | 0.900 (9/10) | 0.500 (5/10) |" in out
    assert "| A2 | fact_recall | 0.600 (3/5) | 0.600 (3/5) |" in out
    assert "| R1 | case_pass | – | – |" in out
    data = json.loads((tmp_path / "t.json").read_text())
    assert data["claude tier"]["metrics"]["case_pass"]["num"] == 3


def test_a_bad_argument_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="is not LABEL=RUN_DIR"):
        tiers.main(["nolabel"])
    with pytest.raises(SystemExit, match="cannot read"):
        tiers.main([f"x={tmp_path}"])

"""The figures the docs cite that committed files decide (benchmarks/doc_figures.py):
case counts, gold facts, the baseline's passed cases and metric n, the cassette's seconds
per case. A doc that keeps a figure the files no longer give fails here."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def doc_figures():
    spec = importlib.util.spec_from_file_location(
        "doc_figures", ROOT / "benchmarks" / "doc_figures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def figs(doc_figures):
    return doc_figures.figures()


def test_the_docs_cite_the_figures_the_committed_files_give(doc_figures, figs):
    assert doc_figures.stale(figs) == []


def test_the_figures_agree_with_each_other(figs):
    assert figs["baseline_cases"] == figs["cases"] == sum(figs["files"].values())
    assert figs["metrics"]["case_pass"]["n"] == figs["cases"]
    assert 0 < figs["attribution_n"] < figs["cases"]
    assert figs["cassette_calls"] >= figs["cases"]  # an extract call per case at least


def test_a_stale_figure_is_reported(doc_figures, figs):
    docs = {p: (ROOT / p).read_text("utf-8") for p in doc_figures.CITATIONS}
    docs["docs/ci.md"] = docs["docs/ci.md"].replace(f"({figs['cases']} cases)", "(157 cases)")
    wrong_n = f"{figs['metrics']['fact_recall']['n']}\n"
    docs["README.md"] = docs["README.md"].replace(wrong_n, "1\n", 1)
    found = doc_figures.stale(figs, docs)
    assert any(line.startswith("docs/ci.md: no 'whole v2 suite") for line in found)
    assert any("fact_recall" in line for line in found)


def test_the_systems_table_in_the_docs_is_the_replayed_one(doc_figures):
    docs = (ROOT / "docs" / "systems.md").read_text("utf-8")
    matrix = (ROOT / "reports" / "systems" / "matrix.md").read_text("utf-8")
    assert doc_figures.systems_stale(docs, matrix) == []
    stale = docs.replace("| tokens per case | 2,155 |", "| tokens per case | 2,077 |")
    assert any("tokens per case" in line for line in doc_figures.systems_stale(stale, matrix))

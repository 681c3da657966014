"""Reports are shared as CI artifacts: text from datasets, models and the command line is
always escaped in report.html and report.md (issue 14, item 1; E7)."""

import json
import re
from html.parser import HTMLParser

from hy_eval.harness._report import markdown_report, write_reports

from .test_report import ok_record

XSS = '<img src=x onerror="document.title=1">'


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.handlers = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.handlers.extend(k for k, _ in attrs if k.startswith("on"))


def hostile_record():
    rec = ok_record(0, "SYSTEM")
    rec.update(id="x1", lang="en", rules=["A1"], tags=[XSS, "</details></summary>", "a|b|c"])
    rec["score"].update(
        facts=[{"text": "ok", "owner": "<b>user</b>", "subject": "user"}],
        checks=[{"check": "<i>fact</i>", "ok": True, "detail": "d"}],
    )
    rec["stages"] = {"<u>extract</u>": rec["stages"]["extract"]}
    return rec


def manifest(model="gpt|<b>x</b>", variant="v`1"):
    return {
        "suite": "toy",
        "provider": "openai",
        "model": model,
        "params": {"variant": variant, "guard": True},
        "dataset_hash": "<abc>" * 4,
        "git": {"commit": "c", "dirty": False},
    }


def test_tags_and_every_record_field_are_escaped_in_html(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps(hostile_record()) + "\n")
    write_reports(tmp_path, manifest(), {}, 0.0)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(page)
    assert parser.handlers == [] and "b" not in parser.tags and "i" not in parser.tags
    assert "u" not in parser.tags
    assert parser.tags.count("details") == 1 and parser.tags.count("img") == 3  # the plots
    assert "#&lt;img src=x onerror=&quot;document.title=1&quot;&gt;" in page
    assert "overflow-wrap:anywhere" in page  # a 48,000 px word wraps


def test_markdown_escapes_tags_model_and_variant(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps(hostile_record()) + "\n")
    summary = write_reports(tmp_path, manifest(), {}, 0.0)
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert text == markdown_report(summary, tmp_path)
    assert re.search(r"(?<!\\)<", text) is None  # no raw HTML at all
    for line in text.splitlines():
        if line.startswith("| ") and "a\\|b\\|c" in line:
            assert len(re.split(r"(?<!\\)\|", line)) == 8  # 6 cells of the tag table
            break
    else:
        raise AssertionError("the tag a|b|c has no row of its own")
    assert text.splitlines()[0] == "# toy: openai:gpt\\|\\<b\\>x\\</b\\>, variant v\\`1"


def test_ordinary_values_are_unchanged_in_markdown(tmp_path):
    rec = ok_record(0, "SYSTEM")
    rec.update(tags=["adversarial", "zh-name_1"])
    (tmp_path / "cases.jsonl").write_text(json.dumps(rec) + "\n")
    write_reports(tmp_path, manifest("Qwen2.5-0.5B-Instruct-Q4_K_M.gguf", "default"), {}, 0.0)
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert text.startswith("# toy: openai:Qwen2.5-0.5B-Instruct-Q4_K_M.gguf, variant `default`")
    assert "| adversarial | 1 |" in text and "| zh-name_1 | 1 |" in text

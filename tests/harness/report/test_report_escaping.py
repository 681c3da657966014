"""Reports are shared as CI artifacts: text from datasets, models and the command line is
always escaped in report.html and report.md (E7). The page is rendered from Jinja
templates with autoescaping and carries the cases as JSON in one script block, which the
browser tests (tests/harness/report/test_pages_browser.py) show as text."""

import json
import re
from html.parser import HTMLParser

from hy_eval.harness.report import markdown_report, script_json, write_reports
from hy_eval.harness.runlog import CallCounts, RunManifest
from tests.harness.report.test_report import ok_record

XSS = '<img src=x onerror="document.title=1">'


#: Every element the report template writes itself; nothing else may appear.
PAGE_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "h1",
    "h2",
    "h3",
    "p",
    "code",
    "nav",
    "a",
    "main",
    "section",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "div",
    "span",
    "i",
    "img",
    "script",
}


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.handlers, self.scripts = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.handlers.extend(k for k, _ in attrs if k.startswith("on"))
        if tag == "script":
            self.scripts.append(dict(attrs))


def embedded_data(page):
    """The JSON of the page's data block (the only script that holds data)."""
    start = page.index('<script type="application/json" id="hy-data">')
    start = page.index(">", start) + 1
    return json.loads(page[start : page.index("</script>", start)])


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
    write_reports(tmp_path, RunManifest.model_validate(manifest()), CallCounts(), 0.0)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(page)
    assert parser.handlers == [] and set(parser.tags) <= PAGE_TAGS
    assert "b" not in parser.tags and "u" not in parser.tags and "details" not in parser.tags
    assert parser.tags.count("img") == 3  # the plots
    # Two scripts: the data block and the page's own code (no src, nothing from the data).
    assert parser.scripts == [{"type": "application/json", "id": "hy-data"}, {}]
    # The tag, escaped by the template in the tag breakdown, and whole in the data.
    shown = "&lt;img src=x onerror=&#34;document.title=1&#34;&gt;"
    assert f'<td class="label"><div title="{shown}">{shown}</div></td>' in page
    data = embedded_data(page)
    assert data["cases"][0]["tags"] == [XSS, "</details></summary>", "a|b|c"]
    assert data["cases"][0]["stages"]["<u>extract</u>"]["user"] == "USER PART 0"
    assert "overflow-wrap:anywhere" in page  # a 48,000 px word wraps


def test_script_json_cannot_end_its_script_block():
    """``</script>``, ``<!--``, ``&`` and U+2028/2029 in data are escaped, and the
    text parses back to the same value."""
    value = {"a</script><script>alert(1)</script>": ["<!--", "&amp;", "\u2028\u2029", "中文"]}
    text = str(script_json(value))
    assert not set("<>&\u2028\u2029") & set(text)
    assert "\\u003c/script\\u003e" in text and "中文" in text
    assert json.loads(text) == value


def test_markdown_escapes_tags_model_and_variant(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps(hostile_record()) + "\n")
    summary = write_reports(tmp_path, RunManifest.model_validate(manifest()), CallCounts(), 0.0)
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
    write_reports(
        tmp_path,
        RunManifest.model_validate(manifest("Qwen2.5-0.5B-Instruct-Q4_K_M.gguf", "default")),
        CallCounts(),
        0.0,
    )
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert text.startswith("# toy: openai:Qwen2.5-0.5B-Instruct-Q4_K_M.gguf, variant `default`")
    assert "| adversarial | 1 |" in text and "| zh-name_1 | 1 |" in text

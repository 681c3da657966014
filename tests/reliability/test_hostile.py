"""The committed corpus of hostile inputs: dataset lines in
``hostile/dataset_lines.json`` and scripted model answers in ``hostile/answers.json``, each
with its expected outcome. docs/reliability.md tabulates them.

Rejected dataset lines must give one line each and exit 2 from ``datasets validate``.
Accepted lines and hostile answers run together in one suite, beside healthy cases, with a
read-write cache: the run must finish with exit 0, one record per case, the reports must
hold no markup from the inputs, and each case must match its expectation.
"""

import json
import re
import subprocess
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hy_eval.conversation._render import LABEL_LINE_RE, NAME_LINE_RE
from hy_eval.harness import Runner, load_suite
from tests.harness.scripted_suite import SuiteModel, perfect_extraction, scripted_config
from tests.loopback import Reply

HERE = Path(__file__).parent / "hostile"
ROOT = Path(__file__).resolve().parents[2]
DATASET = json.loads((HERE / "dataset_lines.json").read_text(encoding="utf-8"))
ANSWERS = json.loads((HERE / "answers.json").read_text(encoding="utf-8"))["answers"]
REJECTED = [e for e in DATASET["lines"] if e["outcome"] == "rejected"]
ACCEPTED = [e for e in DATASET["lines"] if e["outcome"] == "accepted"]
_REPEAT_RE = re.compile(r"«(.+?)\*(\d+)»", re.DOTALL)
#: What a model reads as a speaker label or a name line once it has set aside what it does
#: not see (format characters, leading spaces) and NFKC has made full-width forms plain;
#: written here on its own, apart from the renderer's rule, so that it checks that rule.
_SPEAKING_RE = re.compile(r"\[[^\[\]]+\]\s*:|(?i:the\s+user's\s+name\s+is\s)|用户名叫")


def reads_as_speaking(line):
    visible = "".join(ch for ch in line if unicodedata.category(ch) != "Cf")
    return bool(_SPEAKING_RE.match(unicodedata.normalize("NFKC", visible).lstrip()))


def expand(text, case_id):
    """``{id}`` -> the case id; ``«X*N»`` -> X repeated N times."""
    text = _REPEAT_RE.sub(lambda m: m.group(1) * int(m.group(2)), text)
    return text.replace("{id}", case_id)


def expand_all(value, case_id):
    if isinstance(value, str):
        return expand(value, case_id)
    if isinstance(value, list):
        return [expand_all(v, case_id) for v in value]
    if isinstance(value, dict):
        return {k: expand_all(v, case_id) for k, v in value.items()}
    return value


def dataset_line(entry, case_id):
    """The JSONL line of an entry (ASCII escapes keep lone surrogates writable)."""
    if "line" in entry:
        return expand(entry["line"], case_id)
    case = {**DATASET["base_case"], **entry["patch"]}
    return json.dumps(expand_all(case, case_id))


def test_corpus_names_are_unique_and_outcomes_known():
    names = [e["name"] for e in DATASET["lines"]] + [a["name"] for a in ANSWERS]
    assert len(names) == len(set(names))
    assert {e["outcome"] for e in DATASET["lines"]} == {"rejected", "accepted"}
    assert {a["stage"] for a in ANSWERS} == {"extract", "reconcile"}


def test_rejected_dataset_lines_give_one_line_each_and_exit_2(tmp_path):
    folder = tmp_path / "hostile"
    folder.mkdir()
    path = folder / "lines.jsonl"
    lines = [dataset_line(e, f"ds-{e['name']}") for e in REJECTED]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "run_eval.py", "datasets", "validate", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = (proc.stdout + proc.stderr).splitlines()
    assert proc.returncode == 2, out
    assert "Traceback" not in proc.stderr
    assert all(line.startswith(f"{path}:") for line in out), out
    for lineno, entry in enumerate(REJECTED, start=1):
        mine = [line for line in out if line.startswith(f"{path}:{lineno}: ")]
        assert mine, entry["name"]
        assert any(entry["error"] in line for line in mine), (entry["name"], mine)
        assert all("at at " not in line for line in mine)


class HostileModel(SuiteModel):
    """Answers sent as ASCII JSON, so a lone surrogate crosses the wire as the SDK would
    receive it from a vendor (a ``\\ud800`` escape in the body)."""

    def answer(self, req):
        reply = super().answer(req)
        if isinstance(reply.body, dict):
            reply = Reply(reply.status, json.dumps(reply.body), reply.headers)
        return reply


def make_hostile_run(tmp_path_factory):
    """The corpus's run; the ``hostile_run`` fixture (tests/conftest.py) makes it once per
    test session for these tests and the browser tests of the report pages."""
    tmp = tmp_path_factory.mktemp("hostile")
    folder = tmp / "suite"
    folder.mkdir()
    ids = [f"ds-{e['name']}" for e in ACCEPTED] + [f"ans-{a['name']}" for a in ANSWERS]
    ids += ["ok-1", "ok-2"]
    entries = {f"ds-{e['name']}": e for e in ACCEPTED}
    lines = [dataset_line(entries.get(i, {"patch": {}}), i) for i in ids]
    (folder / "hostile.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    suite = load_suite(str(folder))
    ext = {c.id: perfect_extraction(c) for c in suite.cases}
    rec = {}
    for a in ANSWERS:
        case_id = f"ans-{a['name']}"
        (ext if a["stage"] == "extract" else rec)[case_id] = expand(a["answer"], case_id)
    with HostileModel(suite.cases, ext, rec) as model:
        cfg = scripted_config(
            model.server,
            tmp / "run",
            suite=str(folder),
            cache_mode="read-write",
            cache_path=str(tmp / "cache.sqlite"),
            concurrency=4,
            retries=1,
            retry_base_delay=0.01,
        )
        run_dir, summary, code = Runner(cfg).run()
    # Split at "\n" only: records hold U+2028 and other separators json leaves as they are.
    text = (run_dir / "cases.jsonl").read_text("utf-8")
    records = [json.loads(x) for x in text.split("\n") if x]
    return run_dir, summary, code, {r["id"]: r for r in records}, ids


def test_the_hostile_run_finishes_with_every_case_once(hostile_run):
    _, summary, code, records, ids = hostile_run
    assert code == 0
    assert sorted(records) == sorted(ids)
    assert all(r["status"] == "ok" for r in records.values()), [
        (r["id"], r["error"]) for r in records.values() if r["status"] != "ok"
    ]
    assert records["ok-1"]["score"]["passed"] and records["ok-2"]["score"]["passed"]
    cut = [r for r in records.values() if r.get("truncated")]
    assert summary.truncated["cases"] == len(cut) >= 3
    assert summary.truncated["facts_dropped"] == 9992


def _check(record, expect, case_id):
    """One case against its expectation from the corpus."""
    expect = expand_all(expect, case_id)
    memories = record.get("store_after", {}).get("memories", [])
    active = [m for m in memories if m["status"] == "active"]
    m1 = next((m for m in memories if m["id"] == record.get("existing_ids", {}).get("m1")), None)
    stage_errors = " ".join(str(s.get("parse_error")) for s in record.get("stages", {}).values())
    checks = {
        "status": lambda v: record["status"] == v,
        "passed": lambda v: record["score"]["passed"] == v,
        "parse_error": lambda v: v in stage_errors,
        "parse_failure": lambda v: (record["score"]["counts"]["parse_failure_rate"][0] > 0) == v,
        "fallback": lambda v: (record.get("fallback") or "").startswith(v),
        "max_reason_chars": lambda v: len(record.get("fallback") or "") <= v,
        "memories": lambda v: len(active) == v,
        "max_memory_chars": lambda v: max(len(m["text"]) for m in active) <= v,
        "m1_active": lambda v: (m1 is not None and m1["status"] == "active") == v,
        "m1_text": lambda v: m1 is not None and m1["text"] == v,
        "events": lambda v: record["store_after"]["events"] == v,
        "fact_text": lambda v: [f["text"] for f in record["facts"]] == [v],
        "truncated": lambda v: v.items() <= record.get("truncated", {}).items(),
        "raw_cut": lambda v: any("raw_chars" in s for s in record["stages"].values()) == v,
        "reads_as_speaking": lambda v: (
            len([x for x in record["rendered"].splitlines() if reads_as_speaking(x)]) == v
        ),
        "speaking_lines": lambda v: (
            len(
                [
                    x
                    for x in record["rendered"].splitlines()
                    if LABEL_LINE_RE.match(x) or NAME_LINE_RE.match(x)
                ]
            )
            == v
        ),
    }
    failed = [key for key, want in expect.items() if not checks[key](want)]
    assert not failed, (case_id, failed, {k: record.get(k) for k in ("error", "truncated")})


@pytest.mark.parametrize("entry", ACCEPTED, ids=[e["name"] for e in ACCEPTED])
def test_accepted_dataset_line(hostile_run, entry):
    case_id = f"ds-{entry['name']}"
    _check(hostile_run[3][case_id], entry["expect"], case_id)


@pytest.mark.parametrize("answer", ANSWERS, ids=[a["name"] for a in ANSWERS])
def test_hostile_answer(hostile_run, answer):
    case_id = f"ans-{answer['name']}"
    _check(hostile_run[3][case_id], answer["expect"], case_id)


class _Markup(HTMLParser):
    def __init__(self):
        super().__init__()
        self.starts, self.ends, self.attrs = [], [], []

    def handle_starttag(self, tag, attrs):
        self.starts.append(tag)
        self.attrs.extend((tag, k, v) for k, v in attrs)

    def handle_endtag(self, tag):
        self.ends.append(tag)


def test_report_html_holds_no_markup_from_the_inputs(hostile_run):
    run_dir, _, _, records, _ = hostile_run
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    parser = _Markup()
    parser.feed(page)
    # Two scripts, both the template's: the data block and the page's code.
    assert parser.starts.count("script") == 2
    assert [a for a in parser.attrs if a[0] == "script"] == [
        ("script", "type", "application/json"),
        ("script", "id", "hy-data"),
    ]
    assert [a for a in parser.attrs if a[1].startswith("on")] == []
    sources = [v for t, k, v in parser.attrs if t == "img" and k == "src"]
    assert sources and all(v.startswith("data:image/png;base64,") for v in sources)
    assert parser.starts.count("img") == len(sources) == 3  # the plots only
    assert "details" not in parser.starts and "summary" not in parser.starts
    # Every case is in the data block, whole: the page's script shows it as text
    # (tests/harness/report/test_pages_browser.py runs this corpus in Chromium).
    start = page.index(">", page.index('id="hy-data"')) + 1
    data = json.loads(page[start : page.index("</script>", start)])
    assert sorted(c["id"] for c in data["cases"]) == sorted(records)
    assert "pwned" in page  # the text is there, shown as text
    # A 60,000-character word wraps instead of making the page that wide.
    assert "overflow-wrap:anywhere" in page


def test_report_md_tables_keep_their_columns(hostile_run):
    run_dir, *_ = hostile_run
    text = (run_dir / "report.md").read_text(encoding="utf-8")
    assert re.search(r"(?<!\\)<(img|script|/details|b )", text) is None
    assert re.search(r"(?<!\\)\[click\]", text) is None
    tables: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    for rows in filter(None, tables):
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in rows}
        assert len(widths) == 1, rows
    assert "a\\|b\\|c" in text  # the tag, whole, in its row of the tag table


def test_an_unforeseen_error_costs_its_case_not_the_run(tmp_path, monkeypatch):
    """Defence in depth: whatever a case raises besides a provider
    error or a replay-only miss is recorded as that case's error; the others run."""
    from hy_eval.memory import MemoryClient
    from tests.harness.run.test_run import write_suite

    suite = write_suite(tmp_path / "toy", 4)
    real_add = MemoryClient.add_normalised  # what the runner calls (messages normalised)

    async def add(self, messages, user_id, *args, **kw):
        if "number 2." in messages[0].content:
            raise RecursionError("maximum recursion depth exceeded")
        return await real_add(self, messages, user_id, *args, **kw)

    monkeypatch.setattr(MemoryClient, "add_normalised", add)
    with SuiteModel(suite.cases) as model:
        cfg = scripted_config(
            model.server, tmp_path / "run", suite=str(tmp_path / "toy"), max_error_rate=0.5
        )
        run_dir, summary, code = Runner(cfg).run()
    records = {r["id"]: r for r in map(json.loads, (run_dir / "cases.jsonl").open())}
    assert sorted(records) == ["t-00", "t-01", "t-02", "t-03"]
    assert records["t-02"]["status"] == "error"
    assert (
        records["t-02"]["error"]
        == "internal error: RecursionError: maximum recursion depth exceeded"
    )
    assert all(records[i]["score"]["passed"] for i in ("t-00", "t-01", "t-03"))
    assert code == 0 and summary.metrics["error_rate"].num == 1

"""What a run says while its cases run: the phase (the model loading, which case runs and
for how long), an ETA from the measured time per case, ticking on a terminal."""

import io
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from hy_eval.harness.run import Progress, clock
from hy_eval.llm import CallStats

ROOT = Path(__file__).resolve().parents[3]


class Tty(io.StringIO):
    def isatty(self):
        return True


def fake_llm(status=None):
    provider = SimpleNamespace(status=(lambda: status[0]) if status is not None else None)
    return SimpleNamespace(provider=provider, stats=CallStats())


def test_clock_reads_as_a_duration():
    assert [clock(s) for s in (0, 42.4, 187, 3723, -1)] == ["0 s", "42 s", "3:07", "1:02:03", "0 s"]


def test_phase_case_and_eta_text():
    now = [100.0]
    status = ["loading the model"]
    p = Progress(457, 0, fake_llm(status), enabled=True, concurrency=1, clock_s=lambda: now[0])
    p.start("ms-0001")
    now[0] = 112.0
    assert p.phase_text() == "loading the model, case 1 of 457: ms-0001 (12 s)"
    assert p.eta_s() is None and "ETA" not in p.summary_text()  # none before a case ends
    status[0] = None
    now[0] = 160.0
    p.finish("ms-0001", False)
    p.start("ms-0002")
    now[0] = 163.0
    assert p.phase_text() == "case 2 of 457: ms-0002 (3 s)"
    # One case took 60 s: 456 left at 60 s each, one at a time.
    # 456 left at 60 s each, one at a time, less the 3 s case 2 has already run.
    assert p.eta_s() == 60 * 456 - 3
    assert p.summary_text().startswith("1/457 cases, ETA 7:35:57, 1:03 elapsed, 60.0 s/case,")


def test_eta_divides_by_the_cases_run_at_once_and_leaves_reused_records_out():
    now = [0.0]
    p = Progress(10, 2, fake_llm(), enabled=True, concurrency=4, clock_s=lambda: now[0])
    for label in ("a", "b", "c"):
        p.start(label)
    now[0] = 8.0
    p.finish("a", False)
    p.finish("b", False, reused=True)
    assert p.phase_text() == "case 5 of 10: c (8 s)"
    # 6 cases left at 8 s each (c among them, 8 s spent), four at a time.
    assert p.eta_s() == (8.0 * (10 - 4) - 8.0) / 4
    assert "2.0 s/case (4 at once)" in p.summary_text()  # 8 s a case, four at once


def test_the_eta_weighs_the_cases_left_by_their_work():
    """Short cases first (the English files come first in the suite) must not make the ETA
    of a run whose long cases are still to come read low: the ETA is the work left at the
    measured seconds per unit of work."""
    now = [0.0]
    weights = {"short-1": 1000.0, "short-2": 1000.0, "long-1": 5000.0, "long-2": 5000.0}
    p = Progress(4, 0, fake_llm(), enabled=True, weights=weights, clock_s=lambda: now[0])
    p.start("short-1")
    now[0] = 10.0
    p.finish("short-1", False)
    # 10 s for 1,000 units: the 11,000 left take 110 s (the mean per case would say 30).
    assert p.eta_s() == 110.0
    assert p.summary_text().startswith("1/4 cases, ETA 1:50,")


def test_case_weight_reads_the_conversation_of_a_line():
    from hy_eval.harness.run._progress import CASE_OVERHEAD_TOKENS, case_weight

    en = '{"messages": [{"role": "user", "content": "%s"}]}' % ("word " * 100)
    zh = '{"messages": [{"role": "user", "content": "%s"}]}' % ("我" * 500)
    assert case_weight(en) == CASE_OVERHEAD_TOKENS + 125  # 500 characters, 4 a token
    assert case_weight(zh) == CASE_OVERHEAD_TOKENS + 500  # a token a character
    for bad in ("not json", "[]", '{"messages": 3}', '{"messages": [{"content": 1}]}'):
        assert case_weight(bad) == CASE_OVERHEAD_TOKENS


def test_at_80_columns_the_eta_is_on_the_line(monkeypatch):
    import shutil

    now = [0.0]
    tty = Tty()
    status = ["loading the model, 3 of 4 processes ready"]
    p = Progress(457, 0, fake_llm(status), enabled=True, stream=tty, clock_s=lambda: now[0])
    p.start("ms-zh-native-a-0001")
    now[0] = 30.0
    p.finish("ms-zh-native-a-0001", False)
    p.start("ms-zh-native-a-0002")
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback: os.terminal_size((80, 24)))
    p.draw()
    line = tty.getvalue().split("\r")[-1]
    assert len(line) <= 79 and "ETA " in line, line


def test_the_status_line_is_redrawn_in_place_on_a_terminal_only():
    now = [0.0]
    tty = Tty()
    p = Progress(3, 0, fake_llm(), enabled=True, stream=tty, clock_s=lambda: now[0])
    p.start("c\x1b]0;x")
    p.draw()
    now[0] = 1.0
    p.draw()
    p.close()
    frames = tty.getvalue().split("\r")
    assert frames[1].startswith("0/3 cases | case 1 of 3: c\\u001b]0;x (0 s) | 0 s elapsed")
    assert frames[2].startswith("0/3 cases | case 1 of 3: c\\u001b]0;x (1 s) | 1 s elapsed")
    assert frames[-1] == "" and "\n" not in tty.getvalue()
    plain = io.StringIO()
    q = Progress(3, 0, fake_llm(), enabled=True, stream=plain)
    q.start("a")
    q.draw()
    q.close()
    assert plain.getvalue() == ""


def test_a_run_on_a_terminal_shows_the_model_loading_and_the_case_ticking(tmp_path):
    """The local provider with the scripted worker, whose first request takes 2.5 s (as
    loading the model does), on a pseudo-terminal: the line names the phase and the case,
    and its clock ticks while the call runs."""
    from tests.harness.run.test_run import write_suite

    write_suite(tmp_path / "toy", 2)
    fake = ROOT / "tests" / "llm" / "fake_llama_worker.py"
    plan = tmp_path / "plan.gguf"
    plan.write_text('{"slow_from": 1, "slow_s": 2.5, "slow_until": 1}')
    args = ["--suite", str(tmp_path / "toy"), "--model", str(plan), "--cache-mode", "off"]
    # One case at a time: the line shows the first case alone while the model loads.
    args += ["--out", str(tmp_path / "run"), "--concurrency", "1"]
    code = (
        "import sys; from pathlib import Path; from hy_eval.llm.local import _local; "
        f"_local.WORKER_SCRIPT = Path({str(fake)!r}); from hy_eval.cli import main; "
        f"sys.exit(main({args!r}))"
    )
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=slave, env=env
    )
    os.close(slave)
    out = b""
    deadline = time.time() + 60
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    text = out.decode()
    assert proc.returncode == 0, text
    frames = text.split("\r")
    # Redrawn every second while the first call runs: the case's clock ticks.
    head = "0/2 cases | loading the model, case 1 of 2: t-00"
    assert any(f.startswith(f"{head} (1 s) | ") for f in frames)
    assert any(f.startswith(f"{head} (2 s) | ") for f in frames)
    assert "case 2 of 2: t-01" in text
    assert "ETA" in text

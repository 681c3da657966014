"""The render and parse-history commands: their output, and one line with exit 2 on bad input."""

import json
import subprocess
import sys

import pytest

from hy_eval.cli import main


def test_render_file_and_object_form(tmp_path, capsys):
    f = tmp_path / "c.json"
    f.write_text(
        json.dumps(
            {
                "system": "Be brief.",
                "messages": [{"role": "user", "name": "Tim", "content": "I work at Stripe."}],
            }
        )
    )
    assert main(["render", str(f)]) == 0
    assert capsys.readouterr().out == (
        "The user's name is Tim\n[system]: Be brief.\n[user]: I work at Stripe.\n"
    )


def test_parse_history_prints_json(tmp_path, capsys):
    f = tmp_path / "h.txt"
    f.write_text("用户名叫Tim\n[user]: 我在 Stripe 工作。\n[John]: 我是护士。\n")
    assert main(["parse-history", str(f)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == [
        {"role": "user", "content": "我在 Stripe 工作。", "name": "Tim"},
        {"role": "assistant", "content": "我是护士。\n", "name": "John"},
    ]


@pytest.mark.parametrize(
    "payload, fragment",
    [
        ("{not json", "invalid JSON"),
        ('{"msgs": []}', "unknown field(s) msgs"),
        ('[{"role": "user", "content": 1}]', "message 0: content must be"),
        ("[]", "empty conversation"),
        # hostile input that used to end in a traceback
        ("[" * 5000 + "]" * 5000, "JSON nested too deeply"),
        ('[{"role": "user", "content": "x", "n": ' + "7" * 5000 + "}]", "a number too long"),
        ('[{"role": "user", "content": "\\ud800"}]', "message 0: content holds a lone surrogate"),
        (
            '[{"role": "user", "name": "Tim", "content": "hi"},'
            ' {"role": "assistant", "name": "Tim", "content": "I am a doctor."}]',
            "message 1: name 'Tim' is the current user's name",
        ),
    ],
)
def test_render_bad_input_exit_2_one_line(tmp_path, capsys, payload, fragment):
    f = tmp_path / "bad.json"
    f.write_text(payload)
    assert main(["render", str(f)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_file_and_bad_history(tmp_path, capsys):
    assert main(["render", str(tmp_path / "nope.json")]) == 2
    assert "file not found" in capsys.readouterr().err
    f = tmp_path / "h.txt"
    f.write_text("junk before any label\n[user]: x")
    assert main(["parse-history", str(f)]) == 2
    assert "line 1: text before the first speaker label" in capsys.readouterr().err


def test_stdin_through_python_m():
    proc = subprocess.run(
        [sys.executable, "-m", "hy_eval", "render", "-"],
        input=json.dumps(
            [
                {"role": "user", "content": "I like coffee."},
                {"role": "assistant", "content": "Noted."},
            ],
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[user]: I like coffee.\n[assistant]: Noted.\n"

"""Hostile input for ``datasets import-locomo``: a zip bomb, oversized files and turns,
malformed fields, and a session of many observations. Each input is made here, in
``tmp_path``, and imported by ``python -m hy_eval`` in a subprocess: the import must
refuse it with exit 2 and one line on stderr naming the file and field (never a
traceback), quickly, and leave nothing in the output folder; or, for large but honest
input, finish in time. docs/reliability.md tabulates them; the limits are those of
``hy_eval/harness/datasets/_locomo_limits.py``.
"""

import json
import os
import re
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from hy_eval.harness.datasets import (
    MAX_DOCUMENTS,
    MAX_INPUT_BYTES,
    MAX_OUTPUT_BYTES,
    MAX_SECONDS,
    MAX_TEXT_CHARS,
    MAX_ZIP_RATIO,
)

ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024


def conversation(observations=2, speakers=("Ana", "Ben")):
    """A flat (zip-file form) conversation: one session, turn i the evidence of
    observation i, the speakers taking turns."""
    a, b = speakers
    turns, obs = [], {a: [], b: []}
    for i in range(observations):
        who = speakers[i % 2]
        turns.append({"speaker": who, "dia_id": f"D1:{i + 1}", "text": f"I like topic{i}."})
        obs[who].append([f"{who} likes topic{i} and hobby{i}.", f"D1:{i + 1}"])
    return {"speaker_a": a, "speaker_b": b, "session_1": turns, "session_1_observation": obs}


def nested(conv, sample_id="conv-1"):
    """The same conversation in locomo10.json's form."""
    body = {k: v for k, v in conv.items() if not k.endswith("_observation")}
    obs = {k: v for k, v in conv.items() if k.endswith("_observation")}
    return {"sample_id": sample_id, "conversation": body, "observation": obs}


def write(path, data):
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def import_locomo(source, out, *flags, timeout=120):
    """``(exit code, stderr lines, stdout, seconds)`` of the command in a subprocess."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "hy_eval", "datasets", "import-locomo", str(source)]
    started = time.monotonic()
    proc = subprocess.run(
        [*command, "--out", str(out), *flags],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stderr.splitlines(), proc.stdout, time.monotonic() - started


def assert_refused(source, out, *flags, says, timeout=120):
    """Exit 2, one line on stderr holding each of ``says``, no traceback, no output."""
    code, err, _, seconds = import_locomo(source, out, *flags, timeout=timeout)
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith("hy-eval: error: "), err
    assert "Traceback" not in err[0]
    for text in says:
        assert text in err[0], err
    assert not out.exists(), list(out.iterdir())
    return err[0], seconds


# ---------------------------------------------------------------------------------------
# Size: zip bombs, oversized files, turns and outputs


def test_a_zip_bomb_is_refused_from_its_header_before_it_is_inflated(tmp_path):
    """20 MB of JSON (a valid conversation and spaces) deflated to about 20 KB: under the
    input limit, over the ratio. The whole member was read and imported."""
    bomb = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("data/26.json", json.dumps(conversation()) + " " * (20 * MB))
    assert bomb.stat().st_size < 100_000
    line, seconds = assert_refused(
        bomb, tmp_path / "out", says=["locomo10.zip:data/26.json: inflates", f"{MAX_ZIP_RATIO}:1"]
    )
    assert "zip bomb" in line
    assert seconds < 30


def understate_size(path, name, size):
    """Rewrite the uncompressed size of ``name`` in the zip's local and central headers."""
    raw = bytearray(path.read_bytes())
    encoded = name.encode()
    for signature, offset, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
        at = raw.find(signature)
        while at >= 0:
            if raw[at + name_at : at + name_at + len(encoded)] == encoded:
                raw[at + offset : at + offset + 4] = struct.pack("<I", size)
            at = raw.find(signature, at + 1)
    path.write_bytes(bytes(raw))


def test_a_zip_member_whose_header_understates_its_size_is_one_line(tmp_path):
    """The header says 1,000 bytes; the member inflates to far more. zipfile stops at the
    stated size and finds the checksum wrong: a damaged member, refused in one line (was
    a BadZipFile traceback)."""
    liar = tmp_path / "liar.zip"
    with zipfile.ZipFile(liar, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("26.json", json.dumps(conversation(200)))
    understate_size(liar, "26.json", 1000)
    assert_refused(liar, tmp_path / "out", says=["liar.zip:26.json: cannot read the zip member"])


def test_a_file_over_the_input_limit_is_refused_before_it_is_read(tmp_path):
    """A 40 MB turn (a 50 MB one took 222 s before it was refused): refused from the
    file's size at once, with the limit and the flag that raises it."""
    conv = conversation()
    conv["session_1"][0]["text"] = "word " * (8 * MB)
    big = write(tmp_path / "big.json", conv)
    assert big.stat().st_size > MAX_INPUT_BYTES
    _, seconds = assert_refused(
        big,
        tmp_path / "out",
        says=["big.json: ", f"over the input limit of {MAX_INPUT_BYTES:,}", "--max-input-mb"],
        timeout=60,
    )
    assert seconds < 30


@pytest.mark.parametrize(
    ("place", "field", "what"),
    [
        (lambda c: c["session_1"][0], "text", "session_1.0.text: a turn of"),
        (lambda c: c["session_1"][1], "blip_caption", "session_1.1.blip_caption: a caption of"),
    ],
)
def test_an_oversized_turn_names_its_field_and_the_limit(tmp_path, place, field, what):
    """1,000,000 characters in one turn or caption (was imported, or refused only once
    its case was built, as a line over the suite's line limit naming a case)."""
    conv = conversation()
    place(conv)[field] = "x" * 1_000_000
    source = write(tmp_path / "26.json", conv)
    assert_refused(
        source,
        tmp_path / "out",
        says=[f"26.json: {what} 1,000,000 characters, over the limit of {MAX_TEXT_CHARS:,}"],
    )


def test_an_oversized_observation_names_its_field(tmp_path):
    conv = conversation()
    conv["session_1_observation"]["Ben"][0][0] = "Ben likes " + "y" * 100_000
    source = write(tmp_path / "26.json", conv)
    assert_refused(
        source,
        tmp_path / "out",
        says=["26.json: session_1_observation.Ben.0: an observation of 100,010 characters"],
    )


def test_a_suite_over_the_output_limit_is_refused_and_nothing_is_left(tmp_path):
    """500 observations with the default history make about 2 MB of suite."""
    source = write(tmp_path / "26.json", conversation(500))
    assert_refused(
        source,
        tmp_path / "out",
        "--max-output-mb",
        "1",
        says=["over the output limit of 1,048,576 bytes", "--max-output-mb"],
    )


# ---------------------------------------------------------------------------------------
# Count and time


def test_a_zip_of_more_members_than_the_limit_is_refused_before_any_is_read(tmp_path):
    many = tmp_path / "many.zip"
    text = json.dumps(conversation(0))
    with zipfile.ZipFile(many, "w") as z:
        for i in range(MAX_DOCUMENTS + 1):
            z.writestr(f"{i}.json", text)
    assert_refused(
        many,
        tmp_path / "out",
        says=[f"many.zip: {MAX_DOCUMENTS + 1:,} members, over the limit of {MAX_DOCUMENTS:,}"],
    )


def test_an_import_past_its_time_limit_stops_with_one_line(tmp_path):
    source = write(tmp_path / "26.json", conversation(2000))
    assert_refused(
        source,
        tmp_path / "out",
        "--max-seconds",
        "0.01",
        says=["the import took more than 0.01 seconds", "--max-seconds"],
    )


def test_a_session_of_5000_observations_imports_in_linear_time(tmp_path):
    """A bound, not a benchmark (benchmarks/bench_import.py measures): about 3 s here;
    the time grew with the square of the observations and more (2,000 took 13 s, 10,000
    did not finish in 600 s)."""
    source = write(tmp_path / "26.json", conversation(5000))
    code, err, out, seconds = import_locomo(source, tmp_path / "out", timeout=60)
    assert code == 0, err
    assert "cases: 1250; gold facts: 10000 (5000 observations" in out
    assert seconds < 60


def test_the_help_gives_the_limits_the_import_uses():
    code, _, out, _ = import_locomo("--help", "x")
    text = " ".join(out.split())
    assert code == 0
    for flag, default in (
        ("--max-input-mb", MAX_INPUT_BYTES // MB),
        ("--max-output-mb", MAX_OUTPUT_BYTES // MB),
        ("--max-seconds", f"{MAX_SECONDS:g}"),
    ):
        assert re.search(rf"{flag} [A-Z_]+ [^()]*\(default: {default}\)", text), flag


# ---------------------------------------------------------------------------------------
# Malformed fields


def obs_as_list(tmp_path):
    doc = nested(conversation())
    doc["observation"] = [["Ana likes tea.", "D1:1"]]
    return write(tmp_path / "locomo10.json", [doc]), "locomo10.json[0]: observation: must be"


def long_session_number(tmp_path):
    conv = conversation()
    conv["session_" + "9" * 5000] = conv["session_1"]
    return write(tmp_path / "26.json", conv), "26.json: session_999"


def long_sample_id(tmp_path):
    docs = [nested(conversation(), "conv-" + "7" * 5000), nested(conversation(), "conv-2")]
    return write(tmp_path / "locomo10.json", docs), None


def speaker(field, name):
    """A speaker with this name throughout: in ``field`` and in their turns and
    observations (a mismatch would be refused at the first turn, for another reason)."""

    def make(tmp_path):
        pair = (name, "Ben") if field == "speaker_a" else ("Ana", name)
        conv = conversation(speakers=pair)
        return write(tmp_path / "26.json", conv), f"26.json: {field}: name "

    return make


def newline_in_a_member_name(tmp_path):
    source = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(source, "w") as z:
        z.writestr("data/a\nb.json", "{nope")
    return source, "locomo10.zip:data/a\\nb.json: json: invalid JSON"


@pytest.mark.parametrize(
    "make",
    [
        obs_as_list,
        long_session_number,
        speaker("speaker_a", "user"),
        speaker("speaker_b", "[user]"),
        speaker("speaker_a", "Ana\nuser"),
        speaker("speaker_b", "Assistant"),
        newline_in_a_member_name,
    ],
    ids=[
        "observation-as-a-list",
        "5000-digit-session-number",
        "speaker-user",
        "speaker-[user]",
        "speaker-with-a-newline",
        "speaker-Assistant",
        "newline-in-a-zip-member-name",
    ],
)
def test_a_malformed_field_is_one_line_naming_the_file_and_field(tmp_path, make):
    source, says = make(tmp_path)
    line, _ = assert_refused(source, tmp_path / "out", says=[says])
    assert len(line) < 400


def test_a_5000_digit_sample_id_is_ordered_without_converting_it(tmp_path):
    """Conversations are sorted by number; a number past Python's 4,300-digit conversion
    limit was a ValueError traceback. It is a name like any other now."""
    source, _ = long_sample_id(tmp_path)
    code, err, _, _ = import_locomo(source, tmp_path / "out")
    assert code == 0, err
    ids = [json.loads(x)["id"] for x in (tmp_path / "out" / "locomo.jsonl").open()]
    assert ids[:2] == ["locomo-2-s1-ana", "locomo-2-s1-ben"]
    assert re.fullmatch(r"locomo-7{40}-s1-ana", ids[2])


def test_a_failed_import_leaves_the_suite_that_was_there(tmp_path):
    """Two conversations whose names agree in the 40 characters a case id keeps give the
    same case ids: the suite does not validate. That was found after the new file had
    replaced the old one; now before, and the old suite stays."""
    out = tmp_path / "out"
    good = write(tmp_path / "good.json", conversation())
    assert import_locomo(good, out)[0] == 0
    before = (out / "locomo.jsonl").read_bytes()
    key = "x" * 40
    docs = [nested(conversation(), f"conv-{key}1"), nested(conversation(), f"conv-{key}2")]
    bad = write(tmp_path / "bad.json", docs)
    code, err, _, _ = import_locomo(bad, out)
    assert code == 2, err
    assert len(err) == 1 and "does not validate" in err[0] and "duplicate case id" in err[0]
    assert (out / "locomo.jsonl").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["locomo.jsonl"]

"""`hy-eval memory add/search/show` and `hy-eval cache stats/explain` through the real
OpenAI provider against the scripted loopback model."""

import json

from hy_eval.cli import main

from .scripted import ScriptedModel


def test_memory_add_search_show_and_cache_commands(tmp_path, capsys):
    conv = tmp_path / "c.json"
    conv.write_text(
        json.dumps(
            [
                {"role": "user", "name": "Tim", "content": "I work at Stripe."},
                {"role": "assistant", "name": "John", "content": "I am a nurse in Berlin."},
            ]
        )
    )
    db, cache = tmp_path / "m.sqlite", tmp_path / "cache.sqlite"
    with ScriptedModel() as model:
        model.extract.append(
            {
                "facts": [
                    {"text": "The user works at Stripe.", "owner": "user"},
                    {"text": "John is a nurse in Berlin.", "owner": "user"},
                ],
                "basic_info": {"employer": "Stripe"},
            }
        )
        args = [
            "memory",
            "add",
            str(conv),
            "--user-id",
            "tim",
            "--db",
            str(db),
            "--provider",
            "openai",
            "--base-url",
            model.server.openai_url,
            "--model",
            "scripted",
            "--cache",
            str(cache),
        ]
        assert main(args) == 0
        out = capsys.readouterr()
        assert "model: openai:scripted" in out.err
        result = json.loads(out.out)
        assert [f["text"] for f in result["facts"]] == [
            "The user works at Stripe.",
            "John is a nurse in Berlin.",
        ]
        assert result["profile_changes"]["name"] == [None, "Tim"]
        # The same add into a fresh store is the same request: answered from the cache.
        # (Into the same store it would differ: the first add is now history context.)
        fresh = [str(tmp_path / "m2.sqlite") if a == str(db) else a for a in args]
        assert main(fresh) == 0
        assert model.server.count == 1
    capsys.readouterr()
    assert main(["memory", "search", "nurse", "--user-id", "tim", "--db", str(db)]) == 0
    assert "John is a nurse in Berlin." in capsys.readouterr().out
    assert main(["memory", "show", "--user-id", "tim", "--db", str(db)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["profile"] == {"name": "Tim", "employer": "Stripe"}
    assert shown["memories"][0]["history"][0]["op"] == "ADD"
    assert main(["cache", "stats", "--cache", str(cache)]) == 0
    assert "1 answers" in capsys.readouterr().out
    import sqlite3

    key = sqlite3.connect(cache).execute("SELECT key FROM answers").fetchone()[0]
    assert main(["cache", "explain", key[:10], "--cache", str(cache)]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained[0]["request"]["schema_name"] == "memory_extraction"


def test_memory_add_errors_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    conv = tmp_path / "c.json"
    conv.write_text('[{"role": "user", "content": "hi"}]')
    db = str(tmp_path / "m.sqlite")
    assert (
        main(["memory", "add", str(conv), "--user-id", "t", "--db", db, "--provider", "openai"])
        == 2
    )
    assert "set OPENAI_API_KEY" in capsys.readouterr().err
    assert (
        main(["memory", "add", str(conv), "--user-id", "t", "--db", db, "--provider", "nope"]) == 2
    )
    assert "unknown provider 'nope'" in capsys.readouterr().err
    assert main(["memory", "add", str(conv), "--user-id", "t", "--db", db, "--variant", "zzz"]) == 2
    assert "unknown prompt variant 'zzz'" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user", "content": 7}]')
    with ScriptedModel() as model:
        assert (
            main(
                [
                    "memory",
                    "add",
                    str(bad),
                    "--user-id",
                    "t",
                    "--db",
                    db,
                    "--provider",
                    "openai",
                    "--base-url",
                    model.server.openai_url,
                    "--cache-mode",
                    "off",
                ]
            )
            == 2
        )
        assert model.server.count == 0
    assert "message 0: content must be" in capsys.readouterr().err
    assert main(["cache", "stats", "--cache", str(tmp_path / "none.sqlite")]) == 2


def test_run_with_replay_only_miss_exits_4(tmp_path, capsys):
    with ScriptedModel() as model:
        code = main(
            [
                "--suite",
                "multi_speaker",
                "--limit",
                "1",
                "--provider",
                "openai",
                "--base-url",
                model.server.openai_url,
                "--cache-mode",
                "replay-only",
                "--cache",
                str(tmp_path / "empty.sqlite"),
                "--out",
                str(tmp_path / "r"),
                "--quiet",
            ]
        )
        assert model.server.count == 0
    assert code == 4
    err = capsys.readouterr().err
    assert "ms-en-0001 extract: no cached answer in replay-only mode" in err


def test_run_usage_errors(tmp_path, capsys):
    assert main(["--suite", "nope"]) == 2
    assert "unknown suite (known:" in capsys.readouterr().err
    assert main(["--suite", "multi_speaker", "--variant", "nope"]) == 2
    assert "unknown prompt variant" in capsys.readouterr().err
    assert main(["--suite", "multi_speaker", "--filter", "lang=xx"]) == 2
    assert "no case of suite" in capsys.readouterr().err
    assert main(["--suite", "multi_speaker", "--provider", "gemini"]) == 2
    assert "unknown provider" in capsys.readouterr().err
    assert main(["--resume", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err

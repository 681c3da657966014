"""Check that a change to the datasets only adds cases: every case recorded in
``datasets/frozen.json`` is still there, unchanged.

    python datasets/frozen.py            # check: exit 1 naming each changed or removed case
    python datasets/frozen.py --freeze   # record the cases added since (never rewrites one)

A case is recorded as the SHA-256 of its JSON object written canonically (keys sorted,
no spaces), so re-indenting a line is no change but any edit of its content is. Every
suite folder (a folder of ``datasets/`` holding a ``suite.toml``) is checked. A case that
must change on purpose (a gold error found by a reviewer) is released by hand with
``--release ID`` and frozen again: the manifest's diff then names it in the commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "frozen.json"


def case_digest(obj: dict) -> str:
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def current_cases(root: Path = HERE) -> dict[str, str]:
    """``suite/id`` -> digest for every case of every suite folder under ``root``."""
    found: dict[str, str] = {}
    for suite in sorted(p for p in root.iterdir() if (p / "suite.toml").is_file()):
        for path in sorted(suite.glob("*.jsonl")):
            if path.name.startswith("_"):
                continue  # ignored by the loader too (docs/datasets.md)
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    obj = json.loads(line)
                    found[f"{suite.name}/{obj['id']}"] = case_digest(obj)
    return found


def check(frozen: dict[str, str], now: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    """(changed, removed, added) keys."""
    changed = sorted(k for k in frozen if k in now and now[k] != frozen[k])
    removed = sorted(k for k in frozen if k not in now)
    added = sorted(k for k in now if k not in frozen)
    return changed, removed, added


def main(argv: list[str] | None = None, root: Path = HERE, manifest: Path = MANIFEST) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--freeze", action="store_true", help="record the added cases")
    ap.add_argument(
        "--release",
        action="append",
        default=[],
        metavar="SUITE/ID",
        help="forget one recorded case (then --freeze records it again)",
    )
    args = ap.parse_args(argv)
    frozen = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else {}
    for key in args.release:
        if frozen.pop(key, None) is None:
            print(f"frozen: {key} is not recorded", file=sys.stderr)
            return 2
    now = current_cases(root)
    changed, removed, added = check(frozen, now)
    for key in changed:
        print(f"changed: {key}", file=sys.stderr)
    for key in removed:
        print(f"removed: {key}", file=sys.stderr)
    if changed or removed:
        print(
            f"frozen: {len(changed)} recorded cases changed and {len(removed)} removed; "
            "only new cases may be added",
            file=sys.stderr,
        )
        return 1
    if args.freeze or args.release:
        frozen.update({k: now[k] for k in added})
        manifest.write_text(json.dumps(frozen, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        print(f"frozen: {len(added)} cases recorded, {len(frozen)} in all")
    else:
        print(f"frozen: {len(frozen)} recorded cases unchanged, {len(added)} added")
    return 0


if __name__ == "__main__":
    sys.exit(main())

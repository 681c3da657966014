"""How many answers of a live run's cache equal the committed cassette's, key for key, and
whether this machine decides answers as the recording one did. The command itself is
``hy-eval cassette agree`` (docs/ci.md); this script is kept for the commands in
benchmarks/README.md that name it.

    python run_eval.py --suite multi_speaker --sample 60 --cache /tmp/live.sqlite --out /tmp/live
    python benchmarks/cassette_agreement.py /tmp/live.sqlite [CASSETTE.jsonl]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hy_eval.cli import main as cli  # noqa: E402

CASSETTE = ROOT / "tests" / "cassettes" / "multi_speaker.default.local.jsonl"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    cassette = argv[1] if len(argv) > 1 else str(CASSETTE)
    return cli(["cassette", "agree", "--cassette", cassette, "--cache", argv[0]])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The ``strict`` matcher's time per (gold, predicted) pair against the prediction's
length:

    python benchmarks/bench_strict_long.py                      # 10k, 40k and 1M characters
    python benchmarks/bench_strict_long.py --sizes 10000 40000  # quicker

For each size, two predictions: Chinese text without spaces and English text with them,
each one fact sentence repeated to the length. Two times a pair: ``decide`` on the whole
text (``strict`` itself; linear growth shows as a time per 1,000 characters that stays
about the same and a ratio to the smallest size that follows the ratio of the sizes), and
the text as a run scores it, cut to ``SCORED_TEXT_LIMIT`` first (``bound_texts``). Each
text is new to the caches (a different start), and the segmenter's dictionaries are
loaded before anything is timed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (gold text, keywords, names, the sentence repeated into a long prediction), by script.
PAIRS = {
    "zh, no spaces": (
        "用户每周五和王伟一起吃午饭。",
        ["午饭"],
        ("王伟",),
        "用户每周五和王伟一起吃午饭，",
    ),
    "en, spaces": (
        "The user has lunch with Tom on Fridays.",
        ["lunch"],
        ("Tom",),
        "The user has lunch with Tom on Fridays and ",
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 40_000, 1_000_000])
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from hy_eval.harness.scoring import SCORED_TEXT_LIMIT, bound_texts, decide

    for gold, keywords, names, unit in PAIRS.values():  # dictionaries loaded
        decide(gold, keywords, unit * 3, names)
    print(f"scored texts are cut at {SCORED_TEXT_LIMIT:,} characters")
    print(f"{'prediction':<15} {'chars':>9} {'s / pair':>9} {'ms / 1k chars':>14} "
          f"{'x smallest':>10} {'scored, cut: s':>15}")  # fmt: skip
    for label, (gold, keywords, names, unit) in PAIRS.items():
        first: float | None = None
        for n, size in enumerate(args.sizes):
            text = (unit * (size // len(unit) + 2))[n + 1 : n + 1 + size]
            started = time.perf_counter()
            decide(gold, keywords, text, names)
            took = time.perf_counter() - started
            first = first if first is not None else took
            cut = bound_texts([text[1:]])[0][0]
            started = time.perf_counter()
            decide(gold, keywords, cut, names)
            scored = time.perf_counter() - started
            print(
                f"{label:<15} {size:>9,} {took:>9.3f} {1000 * took / size * 1000:>14.3f} "
                f"{took / first:>10.1f} {scored:>15.3f}"
            )


if __name__ == "__main__":
    main()

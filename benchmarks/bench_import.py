"""The LoCoMo importer's time against the number of observations in one session:

    python benchmarks/bench_import.py                  # 1,000, 2,000 and 10,000, in one run
    python benchmarks/bench_import.py --sizes 1000 2000 --root /tmp/old-checkout

Each size is one generated conversation of one session with that many turns, each turn
the evidence of one observation (speakers taking turns), written as a JSON file in a
temporary folder and imported with the default settings (history, 8 observations a
case). The time is the best of ``--rounds`` imports after one warm-up import of 100
observations (module imports, caches). Linear growth shows as a time per observation
that stays the same and a ratio to the smallest size that follows the ratio of the
sizes. ``--root`` measures another checkout of the package (e.g. ``git archive`` of an
older commit).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

PLACES = ["museum", "harbour", "library", "bakery", "stadium", "garden", "market", "theatre"]
THINGS = ["guitar", "painting", "marathon", "pottery", "chess", "sailing", "poetry", "cooking"]


def session_conversation(observations: int) -> dict[str, Any]:
    """LoCoMo's flat form: Ana and Ben, one session of ``observations`` turns, turn i the
    evidence of observation i (by its speaker), each naming its own words."""
    turns, obs = [], {"Ana": [], "Ben": []}
    for i in range(observations):
        who = ("Ana", "Ben")[i % 2]
        place, thing = PLACES[i % len(PLACES)], THINGS[(i // 8) % len(THINGS)]
        dia = f"D1:{i + 1}"
        turns.append(
            {"speaker": who, "dia_id": dia, "text": f"I took up {thing}{i} near the {place}."}
        )
        obs[who].append([f"{who} took up {thing}{i} near the {place} on day{i}.", dia])
    return {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1": turns,
        "session_1_observation": obs,
    }


def time_import(observations: int, rounds: int, work: Path) -> float:
    from hy_eval.harness.datasets import import_locomo

    source = work / f"in-{observations}" / "1.json"
    source.parent.mkdir()
    source.write_text(json.dumps(session_conversation(observations)), encoding="utf-8")
    best = float("inf")
    for r in range(rounds):
        started = time.perf_counter()
        import_locomo(source, work / f"out-{observations}-{r}")
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 10000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to measure")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    sizes = sorted(args.sizes)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "warm").mkdir()
        time_import(100, 1, work / "warm")
        times = {n: time_import(n, args.rounds, work) for n in sizes}
    base_n, base_t = sizes[0], times[sizes[0]]
    print(f"LoCoMo import, one session, best of {args.rounds} ({args.root.resolve()}):")
    print(f"{'observations':>12}  {'seconds':>8}  {'ms/obs':>7}  {'size ratio':>10}  time ratio")
    for n in sizes:
        t = times[n]
        print(f"{n:>12,}  {t:8.3f}  {1000 * t / n:7.3f}  {n / base_n:10.1f}  {t / base_t:10.1f}")


if __name__ == "__main__":
    main()

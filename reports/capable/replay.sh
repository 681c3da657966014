#!/usr/bin/env bash
# The capable-model study replayed from its cassettes (docs/capable.md): our pipeline on
# the committed 96-case samples of both tiers (multi_speaker and multi_speaker_hard) under
# each prompt variant, each tier's default gated on its baseline, and each variant
# compared paired with the default on the same cases.
#
#   bash reports/capable/replay.sh [OUT]        # default OUT: a fresh temporary folder
#
# The answers were made offline (reports/capable/kit.py) by the model recorded as
# "claude" under the openai provider; the cache holds every answer, so the key below is
# never sent anywhere and nothing reaches a network.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
export OPENAI_API_KEY="${OPENAI_API_KEY:-unused}"
answers="$out/answers.sqlite"
rm -f "$answers" && rm -rf "$out/runs" "$out/hard"

# One tier: import its cassettes, replay its default gated on its own baseline (a capable
# model's figures, not the floor's), require the same gates to FAIL on labels_off, and
# compare every other variant paired with the default on the same cases.
#   tier DIR SUITE SAMPLE TAG BASELINE VARIANT...   (the first variant is the default)
tier() {
    local dir="$1" suite="$2" sample="$3" tag="$4" baseline="$5"
    shift 5
    local variants=("$@") variant code
    mkdir -p "$dir"
    for variant in "${variants[@]}"; do
        python run_eval.py cassette import \
            "tests/cassettes/$suite.$variant.claude.$tag.jsonl" --cache "$answers" >/dev/null
    done
    local common=(--suite "$suite" --filter "id=@$sample" --provider openai --model claude
        --structured json_schema --cache-mode replay-only --cache "$answers" --no-reuse --quiet)
    python run_eval.py "${common[@]}" --variant default --out "$dir/runs/default" \
        --gate .ci/gates.capable.toml --baseline "$baseline"
    # labels_off drops the speaker names (the failure the design note exists to prevent):
    # the same gates must fail on it (exit 1), or the suite cannot see the regression it is for.
    set +e
    python run_eval.py "${common[@]}" --variant labels_off --out "$dir/runs/labels_off" \
        --gate .ci/gates.capable.toml --baseline "$baseline" >"$dir/labels_off.gate.txt" 2>&1
    code=$?
    set -e
    if [ "$code" -ne 1 ]; then
        echo "$suite: the capable-model gates did not fail on labels_off (exit $code): the suite no longer sees the regression" >&2
        cat "$dir/labels_off.gate.txt" >&2
        exit 1
    fi
    grep '^gate FAILED: attribution_accuracy' "$dir/labels_off.gate.txt"
    for variant in "${variants[@]:1}"; do
        if [ "$variant" != labels_off ]; then  # labels_off's run is the gated one above
            python run_eval.py "${common[@]}" --variant "$variant" --out "$dir/runs/$variant" \
                >/dev/null 2>&1
        fi
        python run_eval.py compare "$dir/runs/default" "$dir/runs/$variant" \
            --json "$dir/compare-$variant.json" --html "$dir/compare-$variant.html" \
            >"$dir/compare-$variant.txt"
    done
}

# The existing suite's committed 96-case sample, five prompts.
tier "$out" multi_speaker datasets/multi_speaker/samples/capable96.txt capable96 \
    reports/baselines/multi_speaker.claude.capable96.json \
    default no_examples labels_off rules_off short
# The hard tier's 96-case sample (drawn among its first review's keeps), four prompts,
# gated on its own baseline: labels_off must fail there too.
tier "$out/hard" multi_speaker_hard datasets/multi_speaker_hard/samples/hard96.txt hard96 \
    reports/baselines/multi_speaker_hard.claude.hard96.json \
    default labels_off rules_off short
common=(--suite multi_speaker --filter id=@datasets/multi_speaker/samples/capable96.txt
    --provider openai --model claude --structured json_schema --cache-mode replay-only
    --cache "$answers" --no-reuse --quiet)
# The default scored by the judge, the matcher chosen for capable models: attribution is
# scored only on the pairs the judge calls the same fact (docs/capable.md).
python run_eval.py cassette import tests/cassettes/multi_speaker.default.claude.capable96.judge.jsonl \
    --cache "$answers" >/dev/null
python run_eval.py "${common[@]}" --variant default --matcher judge --out "$out/runs/default.judge" \
    >/dev/null 2>&1
python run_eval.py compare "$out/runs/default" "$out/runs/default.judge" --mixed-matchers \
    --json "$out/compare-judge.json" >"$out/compare-judge.txt"
grep '^attribution_accuracy' "$out/compare-judge.txt"
# The judge (--matcher judge) on the matcher benchmark's test part, from its recorded
# answers: precision 0.90 and recall 0.85 or more per language, as the capable-model
# study chose it by (docs/capable.md).
python run_eval.py cassette import tests/cassettes/matcher_pairs.judge.claude.test.jsonl \
    --cache "$answers" >/dev/null
python run_eval.py matchers evaluate datasets/matcher_pairs/bench.jsonl --split test \
    --matcher judge --provider openai --model claude --structured json_schema \
    --cache "$answers" --cache-mode replay-only --json "$out/judge-test.json" >/dev/null
python - "$out/judge-test.json" <<'PY'
import json
import sys

langs = json.load(open(sys.argv[1], encoding="utf-8"))["matchers"]["judge"]["lang"]
for lang, row in sorted(langs.items()):
    p, r = row["precision"]["value"], row["recall"]["value"]
    print(f"judge on the test part, {lang}: precision {p:.3f}, recall {r:.3f}")
    if p < 0.90 or r < 0.85:
        sys.exit(f"the judge fell under precision 0.90 / recall 0.85 in {lang}")
PY
echo "capable-model replay: runs and comparisons in $out"

#!/usr/bin/env bash
# The side-by-side table of the memory systems (docs/systems.md), on the embedded model
# and on a capable model whose answers were made offline (docs/capable.md).
#
#   bash reports/systems/make.sh record   # live: run hy_memory and mem0 on the sample,
#                                         # write their cassettes (tests/cassettes/)
#   bash reports/systems/make.sh replay [OUT]   # from the cassettes: the three runs under
#                                         # OUT/runs/, the table in OUT (default: this folder)
#   bash reports/systems/make.sh replay-capable [OUT]   # the same from the capable
#                                         # model's cassettes (default: reports/systems/capable)
#
# The sample: 20 cases spread evenly over the suite's files (--sample 20), the same for
# every system; our own pipeline's answers come from the suite's full cassette. mem0 needs
# --context 16384: its extraction prompt is longer than SmolLM2's 8,192-token context.
set -euo pipefail
cd "$(dirname "$0")/../.."
SAMPLE=20
mem0_flags=(--context 16384)
cassette() { echo "tests/cassettes/multi_speaker.$1.default.local.sample$SAMPLE.jsonl"; }

# The three runs of the sample replayed from "${cassettes[@]}" with "${model_flags[@]}",
# and the table of them in OUT ($1); $2 names the make.sh mode in matrix.md's note.
replay_table() {
    local out="$1" mode="$2" answers file
    mkdir -p "$out"
    answers="$out/answers.sqlite"
    rm -f "$answers"
    for file in "${cassettes[@]}"; do
        python run_eval.py cassette import "$file" --cache "$answers" >/dev/null
    done
    local common=(--suite multi_speaker --sample "$SAMPLE" --cache-mode replay-only
        --cache "$answers" --no-reuse --quiet --max-error-rate 1 "${model_flags[@]}")
    rm -rf "$out/runs"
    python run_eval.py "${common[@]}" --out "$out/runs/hy_eval" >/dev/null
    python run_eval.py "${common[@]}" --system hy_memory --out "$out/runs/hy_memory" >/dev/null
    python run_eval.py "${common[@]}" --system mem0 "${mem0_flags[@]}" \
        --out "$out/runs/mem0" >/dev/null
    rm -f "$answers"
    python run_eval.py table "$out/runs/hy_eval" "$out/runs/hy_memory" "$out/runs/mem0" \
        --out "$out"
    # The pages matrix.md links are made here and not committed: say so at its top.
    local note="The reports and comparison pages linked below are made by \`bash reports/systems/make.sh $mode\` (not committed)."
    { printf '%s\n\n' "$note"; cat "$out/matrix.md"; } > "$out/matrix.md.new"
    mv "$out/matrix.md.new" "$out/matrix.md"
}

case "${1:-replay}" in
record)
    cache="${CACHE:-.hy_eval/systems-table.sqlite}"
    python run_eval.py --suite multi_speaker --system hy_memory --sample "$SAMPLE" \
        --cache "$cache" --out "$(mktemp -d)/hy_memory"
    python run_eval.py --suite multi_speaker --system mem0 "${mem0_flags[@]}" \
        --sample "$SAMPLE" --cache "$cache" --out "$(mktemp -d)/mem0"
    python run_eval.py cassette record --system hy_memory --sample "$SAMPLE" \
        --cache "$cache" --file "$(cassette hy_memory)"
    python run_eval.py cassette record --system mem0 "${mem0_flags[@]}" \
        --sample "$SAMPLE" --cache "$cache" --file "$(cassette mem0)"
    ;;
replay)
    cassettes=(tests/cassettes/multi_speaker.default.local.jsonl
        "$(cassette hy_memory)" "$(cassette mem0)")
    model_flags=()
    replay_table "${2:-reports/systems}" replay
    ;;
replay-capable)
    # The capable model's answers were made from offline batch files (docs/capable.md);
    # its cassettes replay under the openai provider with the model id "claude". The cache
    # holds every answer: the key is never sent anywhere.
    cassettes=(tests/cassettes/multi_speaker.default.claude.sample$SAMPLE.jsonl
        tests/cassettes/multi_speaker.hy_memory.default.claude.sample$SAMPLE.jsonl
        tests/cassettes/multi_speaker.mem0.default.claude.sample$SAMPLE.jsonl)
    model_flags=(--provider openai --model claude --structured json_schema)
    mem0_flags=()  # --context is the local provider's
    export OPENAI_API_KEY="${OPENAI_API_KEY:-unused}"
    replay_table "${2:-reports/systems/capable}" replay-capable
    ;;
*)
    echo "usage: make.sh record | replay [OUT] | replay-capable [OUT]" >&2
    exit 2
    ;;
esac

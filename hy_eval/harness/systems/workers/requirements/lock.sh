#!/usr/bin/env bash
# Writes the hash-pinned requirement files of the external systems' virtualenvs
# (docs/systems.md, "Pinned and hash-checked installs"):
#
#   bash hy_eval/harness/systems/workers/requirements/lock.sh          # every NAME.in
#   bash hy_eval/harness/systems/workers/requirements/lock.sh mem0     # one of them
#
# Each NAME.in pins every distribution of a worker's environment (transitive ones too);
# pip-compile resolves it (so the versions stay those of NAME.in) and writes NAME.txt with
# every sha256 the package index lists for each pinned version, wheels and sdists of every
# platform. pip-tools runs in a throwaway virtualenv, and only the public index is asked
# (PIP_CONFIG_FILE=/dev/null: no local mirror or extra index of this machine), so the
# hashes are the index's own. Then a dry run checks that every distribution has a wheel
# except the sdists _venv.SOURCE_BUILDS allows, the same flags _venv.py installs with.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../../.." && pwd)"
PIP_TOOLS_VERSION=7.7.0
tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools/venv"
"$tools/venv/bin/pip" install -q "pip-tools==$PIP_TOOLS_VERSION"

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    names=(_build)
    for f in "$here"/*.in; do
        n="$(basename "$f" .in)"
        [ "$n" = _build ] || names+=("$n")
    done
fi
for n in "${names[@]}"; do
    echo "lock: $n.in -> $n.txt" >&2
    # Run in the folder so that the header and the "via" notes name files, not paths.
    (cd "$here" && PIP_CONFIG_FILE=/dev/null "$tools/venv/bin/pip-compile" --quiet \
        --generate-hashes --allow-unsafe --no-strip-extras --no-emit-index-url \
        --no-emit-find-links --rebuild --output-file "$n.txt" "$n.in")
    # Every distribution from a wheel but the allowed sdists, checked without installing.
    allowed="$(cd "$root" && PYTHONPATH="$root" python3 -c \
        "import sys; from hy_eval.harness.systems._venv import SOURCE_BUILDS as S
print(','.join(S.get(sys.argv[1], ())) or ':none:')" "$n")"
    PIP_CONFIG_FILE=/dev/null "$tools/venv/bin/pip" install --dry-run --ignore-installed \
        --quiet --require-hashes --only-binary :all: --no-binary "$allowed" \
        -r "$here/$n.txt" >/dev/null
done

#!/usr/bin/env bash
# Write `summary --json` and `extract` of every sample log, every real test log and any
# extra files given into OUTDIR, so a refactor can be checked byte for byte:
#   scripts/same_output.sh /tmp/before big1.log big2.log   # on the old commit
#   scripts/same_output.sh /tmp/after  big1.log big2.log   # on the new one
#   diff -r /tmp/before /tmp/after && echo identical
set -euo pipefail
out=${1:?usage: same_output.sh OUTDIR [EXTRA_FILE...]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
tool=${SPARSEETY_TUI:-$here/.venv/bin/sparseety-tui}
mkdir -p "$out"
for path in "$here"/sample_logs/*.jsonl "$here"/sample_logs/*.log \
            "$here"/tests/data/real_logs/*.log "$@"; do
  name=$(basename "$path")
  "$tool" summary "$path" --json > "$out/$name.summary.json"
  "$tool" extract "$path" -o "$out/$name.extract.jsonl" 2> "$out/$name.extract.stderr"
done

#!/usr/bin/env bash
# `summary --json --jobs 1` of the code at REV against the working tree ("worktree"), interleaved, on
# the same files: what a change cost on big logs, measured side by side in one run (the
# machines are shared and noisy, so compare the two columns, not runs of different days).
#
#   bench/ab_summary.sh REV RUNS FILE...
#   e.g. python3 ../shared/tools/gen_logs.py --kind vllm --size 100M --out /tmp/vllm.log
#        bench/ab_summary.sh 37464d2 3 /tmp/vllm.log
set -euo pipefail
if (($# < 3)) || ! [[ $2 =~ ^[0-9]+$ ]]; then
  echo "usage: bench/ab_summary.sh REV RUNS FILE..." >&2
  exit 2
fi
rev=$1 runs=$2
shift 2
files=()
for file in "$@"; do files+=("$(realpath "$file")"); done  # before the cd below
cd "$(dirname "$0")/.."
here=$PWD
base=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$base" >/dev/null 2>&1 || true' EXIT
git worktree add -q --detach "$base" "$rev"
cp sparseety_tui/*.so "$base/sparseety_tui/" 2>/dev/null || true  # the native scanner
cd /  # neither tree on sys.path[0]: PYTHONPATH chooses
for file in "${files[@]}"; do
  for _ in $(seq "$runs"); do
    for side in "$rev" worktree; do
      tree=$here; [ "$side" = "$rev" ] && tree=$base
      /usr/bin/time -f "$(basename "$file") $side %e s wall %U s user %M KiB" \
        env PYTHONPATH="$tree" "$here/.venv/bin/python" -m sparseety_tui summary --json \
        --jobs 1 "$file" 2>&1 >/dev/null | tail -1
    done
  done
done

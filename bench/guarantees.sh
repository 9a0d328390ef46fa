#!/bin/bash
# guarantees.sh: what each of the inbox's guarantees costs at one core, in CPU
# per delivery beside the JetStream floor (bench/README.md, "What each
# guarantee costs"). It applies bench/guarantees.patch (switches read from
# the environment, each leaving one guarantee out) to a temporary worktree of
# HEAD, builds bench/cmd/load there, and runs its jsfloor and inbox rows once
# per configuration, the configurations interleaved, ROUNDS times.
#
#   bash bench/guarantees.sh [ROUNDS] [DURATION]     (from the repository root)
set -euo pipefail
rounds=${1:-3}
dur=${2:-5s}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/wt" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$root" worktree add -q --detach "$tmp/wt" HEAD
git -C "$tmp/wt" apply "$root/bench/guarantees.patch"
(cd "$tmp/wt/bench" && go build -o "$tmp/load" ./cmd/load)
declare -A envs=(
  [full]=""
  [no-seal]="FH_NO_SEAL=1"
  [no-dedupe]="FH_NO_DEDUPE=1"
  [no-running]="FH_NO_RUNNING=1"
  [no-status]="FH_NO_STATUS=1"
  [none]="FH_NO_SEAL=1 FH_NO_DEDUPE=1 FH_NO_STATUS=1"
)
cd "$tmp/wt/bench"
echo "round config inbox_us floor_us ratio"
for r in $(seq 1 "$rounds"); do
  for c in full no-seal no-dedupe no-running no-status none; do
    out=$(env ${envs[$c]} "$tmp/load" -servers jsfloor,inbox -unique -c 64 -duration "$dur" -n 10000000 -warmup 2000 2>&1 | grep '^round')
    fl=$(awk '/ jsfloor /{for(i=1;i<=NF;i++) if($i=="CPU") print $(i+1)}' <<<"$out")
    ib=$(awk '/ inbox /{for(i=1;i<=NF;i++) if($i=="CPU") print $(i+1)}' <<<"$out")
    awk -v r="$r" -v c="$c" -v i="$ib" -v f="$fl" 'BEGIN{printf "%s %s %.1f %.1f %.2f\n", r, c, i, f, i/f}'
  done
done

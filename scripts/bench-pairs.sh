#!/usr/bin/env bash
# bench-pairs.sh A B [PAIRS] [bench flags...]: builds sentinel-top at two
# revisions (commits, branches, or "." for the work tree) and runs
# `sentinel-top bench` in PAIRS pairs (6 by default), A first in odd
# pairs and B first in even ones. It prints each run's µs an item, its
# multiple of encoding/json's decoding, the transition latency's p99 and
# the RSS, then each side's mean and in how many pairs B was lower.
#
# Why pairs: on a shared or virtual machine the same binary measures 15 %
# apart from one run to the next (docs/BENCHMARKS.md), so a change of a few
# per cent only shows against the other binary run just before or after.
# The default flags are the fleet of docs/BENCHMARKS.md's end-to-end
# figures; any flags given replace them. Each pair takes about 70 s.
#
#   scripts/bench-pairs.sh main . 8
#   scripts/bench-pairs.sh HEAD~1 HEAD 4 --agents 500 --resources 20
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
  exit 2
fi
a=$1 b=$2
pairs=${3:-6}
shift $(($# < 3 ? $# : 3))
flags=("$@")
if [ ${#flags[@]} -eq 0 ]; then
  flags=(--agents 2000 --resources 20 --rate 4 --duration 20s --agents-nice 10)
fi
case $pairs in '' | *[!0-9]*) echo "bench-pairs: PAIRS must be a number, not $pairs" >&2; exit 2 ;; esac

root=$(git rev-parse --show-toplevel)
dir=$(mktemp -d)
trap 'rm -rf "$dir"; git -C "$root" worktree prune' EXIT

# build REV NAME: the command at REV ("." the work tree as it is) in $dir/NAME.
build() {
  local rev=$1 name=$2
  if [ "$rev" = . ]; then
    (cd "$root" && go build -o "$dir/$name" ./cmd/sentinel-top)
    return
  fi
  git -C "$root" worktree add -q --detach "$dir/src-$name" "$rev"
  (cd "$dir/src-$name" && go build -o "$dir/$name" ./cmd/sentinel-top)
  git -C "$root" worktree remove --force "$dir/src-$name"
}
build "$a" a
build "$b" b

# figure PATTERN TEXT: the last number in the first match of PATTERN in
# TEXT ("?" when none).
figure() {
  local m
  m=$(grep -oE "$1" <<<"$2" | head -1 | grep -oE '[0-9.]+' | tail -1) || true
  echo "${m:-?}"
}

# run NAME: one bench run of $dir/NAME, as one line of figures.
run() {
  local out
  out=$("$dir/$1" bench "${flags[@]}" 2>/dev/null) || { echo "$1 failed (exit $?)"; return; }
  printf '%s %s %s %s %s\n' "$1" \
    "$(figure '[0-9.]+ µs per item' "$out")" \
    "$(figure 'are [0-9.]+ times' "$out")" \
    "$(figure 'showing it: p50 [0-9]+ ms, p99 [0-9]+' "$out")" \
    "$(figure 'RSS [0-9]+ MB' "$out")"
}

echo "A = $a, B = $b; bench ${flags[*]}"
echo "run µs/item x-json p99-ms RSS-MB"
results=$dir/results
for i in $(seq "$pairs"); do
  # A then B, then B then A: whatever running first or second does to a
  # run falls on both sides alike.
  if [ $((i % 2)) = 1 ]; then
    run a | tee -a "$results"
    run b | tee -a "$results"
  else
    run b | tee -a "$results"
    run a | tee -a "$results"
  fi
done
awk '
  $2 ~ /^[0-9.]+$/ { sum[$1] += $2; n[$1]++ }
  NR % 2 == 1 { first = $1; fv = $2 }
  NR % 2 == 0 && $2 ~ /^[0-9.]+$/ && fv ~ /^[0-9.]+$/ && first != $1 {
    pairs++
    if (($1 == "b" && $2 < fv) || ($1 == "a" && fv < $2)) lower++
  }
  END {
    split("a b", side, " ")
    for (i = 1; i <= 2; i++) if (n[side[i]]) printf "%s: mean %.2f µs an item over %d runs\n", side[i], sum[side[i]] / n[side[i]], n[side[i]]
    if (pairs) printf "B lower in %d of %d pairs\n", lower, pairs
  }' "$results"

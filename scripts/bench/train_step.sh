#!/usr/bin/env bash
# Training step time: muster-train with 2 ranks against 1 rank at the same
# per-rank batch, on CPU with Gloo, launched by muster on this machine. The
# overhead of data parallelism is (2-rank step time / 1-rank step time) - 1;
# target: at most 10 % with overlap on. Also run with --no-overlap, to show
# what overlapping the gradient allreduce with the backward pass buys.
#
# Two ranks also share the machine: two independent one-rank jobs run at the
# same time show what that alone costs, so the table separates it from the
# cost of communication.
#
# Each configuration runs --repeat times (default 3), in rounds that run
# every configuration once; the median step time of a run is what
# muster-train prints, and the table shows the median of the runs. The two ranks share this machine's cores, so the model is sized
# for one core per rank (the benchmark pins nothing).
#
# Usage: scripts/bench/train_step.sh [--build-dir DIR] [--repeat K] [--steps N]
#                                    [--per-rank-batch B] [--hidden H]
# Exits 1 when the overlap-on overhead is above 10 %.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="$ROOT/build"
REPEAT=3
STEPS=60
BATCH=64
HIDDEN=512
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --per-rank-batch) BATCH=$2; shift 2 ;;
    --hidden) HIDDEN=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "train_step.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for bin in muster muster-train; do
  [[ -x "$BUILD/bin/$bin" ]] || { echo "train_step.sh: $BUILD/bin/$bin is missing; build first" >&2; exit 1; }
done

run() {  # nproc [--no-overlap|--concurrent] -> median step ms of one run
  local nproc=$1 flag=${2:-}
  if [[ "$flag" == --concurrent ]]; then
    # Two independent one-rank jobs at once: the machine's load of two ranks
    # without any communication between them. Their mean step time.
    local a b
    a=$(mktemp)
    run 1 > "$a" &
    b=$(run 1)
    wait
    python3 -c "import sys; print((float(sys.argv[1]) + float(sys.argv[2])) / 2)" "$(cat "$a")" "$b"
    rm -f "$a"
    return
  fi
  "$BUILD/bin/muster" --standalone --nproc-per-node "$nproc" --no-python "$BUILD/bin/muster-train" \
    --backend gloo --steps "$STEPS" --global-batch $((BATCH * nproc)) --hidden "$HIDDEN" \
    --depth 3 --features 256 --dataset-size $((BATCH * 2 * 512)) --log-every 1000000 ${flag:+"$flag"} \
    | sed -n 's/.*step time median \([0-9.]*\) ms.*/\1/p'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# Rounds: each runs every configuration once, so that the machine's drift
# (its neighbours come and go) falls on all of them alike.
configs=("1 " "1 --concurrent" "2 " "2 --no-overlap")
declare -A times
for _ in $(seq "$REPEAT"); do
  for config in "${configs[@]}"; do
    t=$(run $config)
    [[ -n "$t" ]] || { echo "train_step.sh: run '$config' printed no step time" >&2; exit 1; }
    times["$config"]+="$t "
  done
done
declare -A result
for config in "${configs[@]}"; do
  result["$config"]=$(printf '%s\n' ${times["$config"]} | median)
  echo "nproc=${config% *} ${config#* } runs: ${times["$config"]}ms" >&2
done

one=${result["1 "]}
pair=${result["1 --concurrent"]}
two=${result["2 "]}
two_no=${result["2 --no-overlap"]}
python3 - "$one" "$pair" "$two" "$two_no" "$BATCH" "$HIDDEN" <<'PY'
import sys
one, pair, two, two_no = map(float, sys.argv[1:5])
batch, hidden = sys.argv[5], sys.argv[6]
print(f"| configuration (per-rank batch {batch}, hidden {hidden}x3) | step time (median) "
      "| vs 1 rank | vs two 1-rank jobs at once |")
print("|---|---:|---:|---:|")
print(f"| 1 rank | {one:.2f} ms | 1.00x | |")
print(f"| two 1-rank jobs at once (no communication) | {pair:.2f} ms | {pair / one:.2f}x | 1.00x |")
print(f"| 2 ranks, overlap on | {two:.2f} ms | {two / one:.2f}x | {two / pair:.2f}x |")
print(f"| 2 ranks, overlap off | {two_no:.2f} ms | {two_no / one:.2f}x | {two_no / pair:.2f}x |")
overhead = two / one - 1
print(f"data-parallel overhead with overlap, against 1 rank alone: {overhead * 100:.1f} % "
      f"(target <= 10 %): " + ("met" if overhead <= 0.10 else "MISSED"))
print(f"of which the machine (two processes sharing its cores): {(pair / one - 1) * 100:.1f} %; "
      f"communication and synchronisation: {(two / pair - 1) * 100:.1f} %")
sys.exit(0 if overhead <= 0.10 else 1)
PY

#!/usr/bin/env bash
# Runs the libFuzzer targets of a MUSTER_FUZZ=ON build; builds nothing.
#
# Usage: tests/fuzz/run_fuzzers.sh BUILD_DIR [TARGET...]
#   TARGET: a name of tests/fuzz/corpus/ (frame_codec, host_list, ...);
#   default: every one. MUSTER_FUZZ_TOTAL_SECONDS (default 256): the fuzzing
#   time of all targets together, split evenly between them (at least 1 s
#   each), so adding a target does not make the run longer.
#   MUSTER_FUZZ_SECONDS, when set: how long each target fuzzes instead.
#   MUSTER_FUZZ_JOBS (default 1): how many targets fuzz at once (each target
#   is one process; their reports print in target order).
#
# For each target: first every kept crash in tests/fuzz/regressions/TARGET/
# is run once, then the target fuzzes for its share of the time on a copy of
# tests/fuzz/corpus/TARGET/ (the repository's corpus is never written), in
# its own temporary working directory. Prints the executions of each run
# (libFuzzer's stat::number_of_executed_units). Exits 1 on any crash, leak,
# timeout, out-of-memory or broken invariant, after printing the path of the
# input that caused it and the command that reproduces it; 2 on bad usage or
# a missing target binary.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_DIR="$ROOT/tests/fuzz"
TOTAL_SECONDS=${MUSTER_FUZZ_TOTAL_SECONDS:-256}
# ASan+UBSan inflate memory; a decoder that needs more than this for inputs
# of a few KiB has a bound missing. Per-input time limit, likewise.
RSS_LIMIT_MB=2048
INPUT_TIMEOUT_S=25

if (($# < 1)); then
  echo "usage: $0 BUILD_DIR [TARGET...]" >&2
  exit 2
fi
BIN_DIR=$(cd "$1" && pwd)/fuzz
shift
if ! [[ "$TOTAL_SECONDS" =~ ^[1-9][0-9]*$ ]]; then
  echo "run_fuzzers: MUSTER_FUZZ_TOTAL_SECONDS='$TOTAL_SECONDS' must be a positive number of seconds" >&2
  exit 2
fi
if [[ -n "${MUSTER_FUZZ_SECONDS:-}" && ! "$MUSTER_FUZZ_SECONDS" =~ ^[1-9][0-9]*$ ]]; then
  echo "run_fuzzers: MUSTER_FUZZ_SECONDS='$MUSTER_FUZZ_SECONDS' must be a positive number of seconds" >&2
  exit 2
fi
JOBS=${MUSTER_FUZZ_JOBS:-1}
if ! [[ "$JOBS" =~ ^[1-9][0-9]*$ ]]; then
  echo "run_fuzzers: MUSTER_FUZZ_JOBS='$JOBS' must be a positive number of targets" >&2
  exit 2
fi

if (($# > 0)); then
  targets=("$@")
else
  mapfile -t targets < <(cd "$FUZZ_DIR/corpus" && ls -d -- */ | tr -d /)
fi
# Each target's share of the total, unless a time per target is given.
SECONDS_EACH=${MUSTER_FUZZ_SECONDS:-$((TOTAL_SECONDS / ${#targets[@]}))}
((SECONDS_EACH >= 1)) || SECONDS_EACH=1
for target in "${targets[@]}"; do
  if [[ ! -x "$BIN_DIR/fuzz_$target" || ! -d "$FUZZ_DIR/corpus/$target" ]]; then
    echo "run_fuzzers: no $BIN_DIR/fuzz_$target or no corpus tests/fuzz/corpus/$target;" \
      "build with -DMUSTER_FUZZ=ON (cmake --build BUILD_DIR --target fuzzers)" >&2
    exit 2
  fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/muster-fuzz.XXXXXX")
failed=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
FLAGS=(-rss_limit_mb="$RSS_LIMIT_MB" -timeout="$INPUT_TIMEOUT_S" -print_final_stats=1)

# Prints what went wrong with `target` from its log, the inputs libFuzzer
# wrote, and how to rerun one.
report_failure() {
  local target=$1 log=$2 artifacts=$3
  echo "---- last lines of $log"
  tail -n 40 "$log"
  echo "----"
  local found=0
  for input in "$artifacts"/*; do
    [[ -f "$input" ]] || continue
    found=1
    echo "FAIL fuzz_$target: crashing input $input"
    echo "  reproduce: $BIN_DIR/fuzz_$target $input"
    echo "  keep it:   cp $input $FUZZ_DIR/regressions/$target/  (with the fix)"
  done
  if ((found == 0)); then echo "FAIL fuzz_$target: no input written; see $log"; fi
}

executions() {
  sed -n 's/^stat::number_of_executed_units: *//p' "$1" | tail -n 1
}

# Fuzzes one target; its report goes to stdout, and its exit code says
# whether it failed. Runs in a subshell of its own (it changes directory).
fuzz_one() {
  local target=$1 bin dir seeds regressions
  bin="$BIN_DIR/fuzz_$target"
  dir="$WORK/$target"
  mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/cwd"
  # The targets run in an empty directory: fuzz_cli_argv's --config may
  # only name something there.
  cd "$dir/cwd"

  regressions=()
  if [[ -d "$FUZZ_DIR/regressions/$target" ]]; then
    mapfile -t regressions < <(find "$FUZZ_DIR/regressions/$target" -type f ! -name '.*' | sort)
  fi
  if ((${#regressions[@]} > 0)); then
    if "$bin" "${FLAGS[@]}" -artifact_prefix="$dir/artifacts/" "${regressions[@]}" \
      >"$dir/regressions.log" 2>&1; then
      echo "fuzz_$target: ${#regressions[@]} regression inputs pass"
    else
      echo "FAIL fuzz_$target: a regression input fails again"
      grep -E '^Running: ' "$dir/regressions.log" | tail -n 1 || true
      report_failure "$target" "$dir/regressions.log" "$dir/artifacts"
      return 1
    fi
  fi

  cp -r "$FUZZ_DIR/corpus/$target/." "$dir/corpus/"
  seeds=$(find "$dir/corpus" -type f | wc -l)
  if "$bin" "${FLAGS[@]}" -max_total_time="$SECONDS_EACH" -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" >"$dir/fuzz.log" 2>&1; then
    echo "fuzz_$target: $(executions "$dir/fuzz.log") executions in ${SECONDS_EACH} s," \
      "corpus $seeds -> $(find "$dir/corpus" -type f | wc -l) inputs, no crash"
  else
    echo "FAIL fuzz_$target: $(executions "$dir/fuzz.log") executions before the failure"
    report_failure "$target" "$dir/fuzz.log" "$dir/artifacts"
    return 1
  fi
}

# At most JOBS targets at once; each one's report is printed whole, in the
# targets' order, once it and every target before it have finished.
pids=()
for i in "${!targets[@]}"; do
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; done
  (fuzz_one "${targets[i]}") >"$WORK/report.$i" 2>&1 &
  pids[i]=$!
done
for i in "${!targets[@]}"; do
  wait "${pids[i]}" || failed=1
  cat "$WORK/report.$i"
done

cd "$ROOT"
if ((failed)); then
  echo "run_fuzzers: FAILED; logs and inputs kept in $WORK"
  exit 1
fi
rm -rf "$WORK"
echo "run_fuzzers: ${#targets[@]} targets, no crash"

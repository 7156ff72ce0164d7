#!/usr/bin/env bash
# The GPU check: one command that proves muster's GPU path (CUDA kernels,
# cuBLAS, the NCCL communicator) on a machine with an NVIDIA GPU and records
# the figures for docs/benchmarks.md ("GPU runs"). Steps, each in the table:
#
#   gpu         `nvidia-smi -L`: the GPU(s), driver and CUDA version, the date.
#   deps        scripts/install-deps.sh --build-only (installs only what is missing;
#               the GPU tests need /usr/bin/python3 but not torch or SLURM).
#   build       scripts/build.sh build-gpucheck -DMUSTER_CUDA=on -DCMAKE_BUILD_TYPE=Release
#               (configure fails without CUDA and NCCL: cmake/CudaSupport.cmake;
#               warnings are errors, as in every script's build).
#   tests       one row per test: every ctest test labelled gpu (`ctest -L gpu`:
#               unit/runtime_train_gpu_tests, integration/runtime_train_gpu,
#               integration/runtime_comm).
#   weights     muster-train over NCCL and over Gloo (CPU), same seed, steps and
#               flags, final weights (--out) compared: scripts/gpu_check/train_compare.py
#               runs tests/integration/runtime_train_gpu_test.py's compare_with_gloo
#               (1e-4 relative, and the final loss); two ranks too with two GPUs.
#   train step  NCCL step time of muster-train in scripts/bench/train_step.sh's
#               configuration (per-rank batch 64, hidden 512x3, features 256),
#               overlap on and off, against 1 rank on CPU over Gloo; 2 ranks
#               with two GPUs. Median of 3 runs of 100 steps each.
#   reform      in-place re-forming of an NCCL communicator, 3 ranks sharing the GPUs:
#               scripts/bench/comm_reform.sh --backend nccl --runs 5 --torch none (the
#               interrupt of a blocked allreduce, ncclCommShrink, a new communicator).
#               A shrink every survivor refused cleanly is SKIP with fewer than 3 GPUs
#               (ranks sharing a GPU), FAIL with a GPU per rank.
#   warm        warm workers: a worker forked from the node's warm process initialises
#               CUDA after the fork (scripts/gpu_check/warm_cuda.py: ctypes on
#               libcudart, 64 MiB cudaMalloc/cudaMemset/cudaDeviceSynchronize per rank,
#               a rank per GPU, at least 2 sharing round-robin), warm and with
#               --no-warm-workers, alternated 3 times; --warm-import torch where the
#               interpreter has torch. Every rank's CUDA work done, warm runs without
#               event=warm_fallback and every worker forked warm; the figure is the
#               median time from muster's start to the last rank's synchronize.
#   in place (NCCL)  the muster Python package on the GPU: scripts/gpu_check/nccl_in_place.py
#               (examples/torch/ddp_in_place.py's job on CUDA, muster.InPlace over
#               NCCL, ranks sharing a GPU with a distinct NCCL_HOSTID), fault-free and
#               with rank 1 SIGKILLed at step 12: recovered in place, rank 0 kept its
#               process, weights within 1e-5 of the fault-free run. SKIP where the
#               interpreter's torch has no CUDA.
#   allreduce   NCCL allreduce bandwidth: always SKIP for now, scripts/bench has no
#               NCCL allreduce benchmark (allreduce.sh times host buffers over
#               Gloo; allreduce_bench_worker refuses --backend nccl).
# Every step runs even after one failed (a step that needs the build is SKIP
# when the build failed); every process the check started is stopped when it
# ends or is interrupted (found by MUSTER_GPU_CHECK_RUN in its environment).
# Not yet timed on a GPU machine; expected a few minutes on 16 cores: the build
# is about 11 CPU-minutes, the rest about 2 minutes (2-core machine: build
# 5.3 minutes, the GPU tests' skip paths and runtime_comm 20 s).
#
# Then one table (check, PASS/FAIL/SKIP, key figure), also written as markdown
# with the date, GPU, driver, CUDA, NCCL and commit to OUT_DIR/gpu_check.md,
# with the row for docs/benchmarks.md's "GPU runs" table; each step's log is
# in OUT_DIR/gpu_check-logs/.
#
# Without a GPU the reason is printed. Where the CUDA toolkit and NCCL are
# installed, deps, build and tests still run (the CUDA build must compile, and
# the GPU tests must skip with their reason, not fail); the steps that need a
# GPU are SKIP. Without the toolkit nothing else runs.
#
# Usage: scripts/gpu_check.sh [-h|--help]
# Env: OUT_DIR  where gpu_check.md and the logs go; default $OUT when set (the
#               device runner brings back what is written there), else build-gpucheck/
#      MUSTER_SKIP_BUILD=1  skip deps and build, use the existing build-gpucheck/
# Exit: 0   a GPU is present and no check failed
#       1   a check failed (FAIL in the table)
#       77  no GPU (nvidia-smi lists none), and nothing that could run here
#           failed: "skipped", the test suite's convention (ctest SKIP_RETURN_CODE);
#           CI without a GPU can accept it (GitLab: allow_failure: exit_codes: 77)
#       2   bad usage;  130  interrupted (the table so far is still printed)
set -uo pipefail  # no -e: a failed step is a row in the table, not the end
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR="$ROOT/build-gpucheck"
OUT_DIR=${OUT_DIR:-${OUT:-$BUILD_DIR}}
LOG_DIR="$OUT_DIR/gpu_check-logs"
PYTHON=/usr/bin/python3  # Debian's interpreter, the one the integration tests use

BUILD_OPTIONS=(-DMUSTER_CUDA=on -DCMAKE_BUILD_TYPE=Release)
# train step: scripts/bench/train_step.sh's model, sized for one CPU core per rank.
TRAIN_STEP_ARGS=(--hidden 512 --depth 3 --features 256 --dataset-size 65536 --log-every 1000000)
TRAIN_STEP_BATCH=64  # per rank
TRAIN_STEP_STEPS=100
TRAIN_STEP_REPEAT=3

case "${1:-}" in
  "") ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "gpu_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

mkdir -p "$LOG_DIR" || exit 1
OUT_DIR=$(cd "$OUT_DIR" && pwd) LOG_DIR=$(cd "$LOG_DIR" && pwd) || exit 1
rm -f "$LOG_DIR"/*.log "$OUT_DIR/gpu_check.md"
cd "$ROOT" || exit 1

say() { printf 'gpu_check: %s\n' "$*"; }

# --- the table -------------------------------------------------------------
ROW_CHECK=() ROW_RESULT=() ROW_FIGURE=()
row() {  # CHECK RESULT FIGURE
  ROW_CHECK+=("$1") ROW_RESULT+=("$2") ROW_FIGURE+=("$3")
  printf '  -> %s %s: %s\n' "$2" "$1" "$3"
}
failed_rows() {
  local r n=0
  for r in "${ROW_RESULT[@]}"; do [[ $r == FAIL ]] && n=$((n + 1)); done
  echo "$n"
}

# --- processes -------------------------------------------------------------
# Every process this check starts inherits the token; ctest, the harness and
# muster pass the environment on, also to processes in sessions of their own.
RUN_TOKEN="$$.$(date +%s%N)"
export MUSTER_GPU_CHECK_RUN="$RUN_TOKEN"
CHILD=""
stop_leftovers() {  # stops what this run started and is still running; sets STOPPED
  local dir pid pids=()
  STOPPED=0
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [[ $pid == "$$" ]] && continue
    grep -qzxF "MUSTER_GPU_CHECK_RUN=$RUN_TOKEN" "$dir/environ" 2>/dev/null && pids+=("$pid")
  done
  ((${#pids[@]} > 0)) || return 0
  STOPPED=${#pids[@]}
  kill -TERM "${pids[@]}" 2>/dev/null
  local alive
  for _ in 1 2 3 4 5 6 7 8 9 10; do  # 3 s for them to exit, then SIGKILL
    alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    ((${#alive[@]} > 0)) || return 0
    pids=("${alive[@]}")
    sleep 0.3
  done
  kill -KILL "${pids[@]}" 2>/dev/null
  return 0
}

run_logged() {  # LOG LIMIT_S COMMAND...: runs COMMAND (output to LOG) under a time limit
  local log=$1 limit=$2 rc
  shift 2
  timeout --kill-after=15 "$limit" "$@" >"$log" 2>&1 &
  CHILD=$!
  wait "$CHILD"
  rc=$?
  CHILD=""
  return "$rc"
}

show_tail() {  # LOG: the end of a failed step's log (of a ctest log: the test's own output)
  echo "     --- last lines of $1:"
  if [[ $(basename "$1") == ctest-* ]]; then
    grep -E '^[0-9]+: |Test +#[0-9]+: ' "$1" | grep -v 'Test timeout computed' | tail -n 25 | sed 's/^/     | /'
  else
    tail -n 25 "$1" | sed 's/^/     | /'
  fi
}

# --- what is measured where ------------------------------------------------
DATE_UTC=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
DATE_DAY=${DATE_UTC%% *}
HOST=$(hostname 2>/dev/null || echo '?')
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')
if [[ $COMMIT != '?' ]] && ! git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null; then
  COMMIT="$COMMIT + local changes"
fi

GPU_COUNT=0 GPU_NAMES="" GPU_DRIVER="" GPU_CUDA="" NO_GPU_REASON=""
detect_gpu() {
  local listing
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    NO_GPU_REASON="nvidia-smi is not installed (no NVIDIA driver on this machine)"
    return
  fi
  if ! listing=$(timeout 60 nvidia-smi -L 2>&1); then
    NO_GPU_REASON="nvidia-smi -L failed: $(head -n 1 <<<"$listing")"
    return
  fi
  GPU_COUNT=$(grep -c '^GPU [0-9]' <<<"$listing")
  if ((GPU_COUNT == 0)); then
    NO_GPU_REASON="nvidia-smi -L lists no GPU"
    return
  fi
  grep '^GPU [0-9]' <<<"$listing" | sed 's/^/gpu_check: /'
  GPU_NAMES=$(timeout 60 nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null |
    sort | uniq -c | sed -E 's/^ *([0-9]+) (.*)/\1x \2/' | paste -sd ';' | sed 's/;/; /g')
  GPU_DRIVER=$(timeout 60 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  GPU_NAMES=${GPU_NAMES:-"$GPU_COUNT GPU(s)"}
  GPU_CUDA=$(timeout 60 nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)
}

# The toolkit: nvcc (CMake looks on PATH) and nccl.h (where CudaSupport.cmake looks).
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  PATH="/usr/local/cuda/bin:$PATH"
fi
NVCC_VERSION="" NCCL_VERSION=""
if command -v nvcc >/dev/null 2>&1; then
  NVCC_VERSION=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
fi
for header in /usr/local/cuda/include/nccl.h /usr/include/nccl.h; do
  if [[ -f $header ]]; then
    NCCL_VERSION=$(awk '/#define NCCL_(MAJOR|MINOR|PATCH) /{v[$2]=$3}
      END{if (v["NCCL_MAJOR"] != "") print v["NCCL_MAJOR"] "." v["NCCL_MINOR"] "." v["NCCL_PATCH"]}' "$header")
    break
  fi
done

# --- the table, printed and written ------------------------------------------
print_table() {
  local i w1=5 w2=6 md="$OUT_DIR/gpu_check.md" verdict figure passed=0 total=${#ROW_CHECK[@]}
  for i in "${!ROW_CHECK[@]}"; do
    ((${#ROW_CHECK[i]} > w1)) && w1=${#ROW_CHECK[i]}
    [[ ${ROW_RESULT[i]} == PASS ]] && passed=$((passed + 1))
  done
  echo
  echo "GPU check, $DATE_UTC, $HOST: ${GPU_NAMES:-no GPU}"
  printf "%-${w1}s  %-${w2}s  %s\n" check result "key figure"
  printf "%-${w1}s  %-${w2}s  %s\n" "$(printf '%*s' "$w1" '' | tr ' ' -)" ------ ----------
  for i in "${!ROW_CHECK[@]}"; do
    printf "%-${w1}s  %-${w2}s  %s\n" "${ROW_CHECK[i]}" "${ROW_RESULT[i]}" "${ROW_FIGURE[i]}"
  done
  if (($(failed_rows) > 0)); then
    verdict="FAIL ($(failed_rows) of $total checks failed)"
  elif ((GPU_COUNT == 0)); then
    verdict="SKIPPED (no GPU; $passed of $total checks passed, none failed)"
  else
    verdict="PASS ($passed of $total checks passed, none failed)"
  fi
  echo "result: $verdict"
  {
    echo "## GPU check, $DATE_DAY"
    echo
    echo "- date: $DATE_UTC, host \`$HOST\`"
    echo "- GPU: ${GPU_NAMES:-none: $NO_GPU_REASON}"
    echo "- driver ${GPU_DRIVER:-?}, CUDA ${GPU_CUDA:-?} (driver); toolkit: nvcc ${NVCC_VERSION:-?}, NCCL ${NCCL_VERSION:-?}"
    echo "- muster: commit $COMMIT; build \`${BUILD_DIR#"$ROOT"/}\` (Release, CUDA on)"
    echo "- command: \`scripts/gpu_check.sh\`; result: $verdict"
    echo
    echo "| check | result | key figure |"
    echo "|---|---|---|"
    for i in "${!ROW_CHECK[@]}"; do
      figure=${ROW_FIGURE[i]//|/\\|}
      echo "| ${ROW_CHECK[i]} | ${ROW_RESULT[i]} | $figure |"
    done
    echo
    echo "Row for the \"GPU runs\" table of docs/benchmarks.md:"
    echo
    echo "| $DATE_DAY | ${GPU_NAMES:-no GPU} | ${GPU_DRIVER:-?} / ${GPU_CUDA:-?} / ${NCCL_VERSION:-?} | \`scripts/gpu_check.sh\` | $verdict | ${SUMMARY_NOTE:-} |"
  } >"$md"
  echo "table: $md; logs: $LOG_DIR/"
}

finish() {  # EXIT_CODE
  stop_leftovers
  ((STOPPED > 0)) && say "stopped $STOPPED leftover process(es) this check had started"
  print_table
  exit "$1"
}

# shellcheck disable=SC2317  # called by the trap
on_signal() {
  trap - INT TERM
  echo
  say "interrupted: stopping what this check started"
  [[ -n $CHILD ]] && kill -TERM "$CHILD" 2>/dev/null
  row interrupted FAIL "by a signal; the checks after it did not run"
  finish 130
}
trap on_signal INT TERM

# --- 1. gpu ----------------------------------------------------------------
say "$DATE_UTC on $HOST, muster $COMMIT"
say "== gpu: nvidia-smi -L"
detect_gpu
if ((GPU_COUNT > 0)); then
  say "driver $GPU_DRIVER, CUDA $GPU_CUDA (driver); toolkit: nvcc ${NVCC_VERSION:-not found}, NCCL ${NCCL_VERSION:-not found}"
  row gpu PASS "$GPU_NAMES; driver $GPU_DRIVER, CUDA $GPU_CUDA"
else
  say "no GPU: $NO_GPU_REASON"
  row gpu SKIP "no GPU: $NO_GPU_REASON"
fi
CAN_BUILD=1
if ((GPU_COUNT == 0)) && [[ -z $NVCC_VERSION || -z $NCCL_VERSION ]]; then
  CAN_BUILD=0
  say "no CUDA toolkit and NCCL either (nvcc ${NVCC_VERSION:-missing}, nccl.h ${NCCL_VERSION:-missing}): nothing else can run here"
fi
skip_reason_without_gpu="no GPU: $NO_GPU_REASON"

# --- 2. deps, 3. build -------------------------------------------------------
BUILD_OK=0
NOT_BUILT="the build failed"
((CAN_BUILD == 0)) && NOT_BUILT="no GPU and no CUDA toolkit"
BIN="$BUILD_DIR/bin"
if ((CAN_BUILD == 0)); then
  say "== deps, build: skipped"
  row deps SKIP "no GPU and no CUDA toolkit"
  row build SKIP "no GPU and no CUDA toolkit"
elif [[ ${MUSTER_SKIP_BUILD:-0} == 1 ]]; then
  say "== deps, build: skipped (MUSTER_SKIP_BUILD=1)"
  row deps SKIP "MUSTER_SKIP_BUILD=1"
  # MUSTER_CUDA=on configures only with CUDA and NCCL found.
  if [[ -x $BIN/muster-train ]] && grep -qi '^MUSTER_CUDA:STRING=on$' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    BUILD_OK=1
    row build SKIP "MUSTER_SKIP_BUILD=1: the existing ${BUILD_DIR#"$ROOT"/}/"
  else
    row build FAIL "MUSTER_SKIP_BUILD=1 but ${BUILD_DIR#"$ROOT"/}/ holds no CUDA build"
  fi
else
  # --build-only: the GPU tests need python3 but neither torch nor SLURM.
  say "== deps: scripts/install-deps.sh --build-only"
  if run_logged "$LOG_DIR/deps.log" 900 scripts/install-deps.sh --build-only; then
    if [[ -x $PYTHON ]]; then
      row deps PASS "$(tail -n 1 "$LOG_DIR/deps.log"); $("$PYTHON" --version 2>&1)"
    else
      row deps FAIL "$PYTHON (the integration tests' interpreter) is missing: apt-get install python3"
    fi
  else
    rc=$?
    row deps FAIL "scripts/install-deps.sh exited $rc (log: deps.log)"
    show_tail "$LOG_DIR/deps.log"
  fi

  say "== build: scripts/build.sh ${BUILD_DIR#"$ROOT"/} ${BUILD_OPTIONS[*]}"
  started=$SECONDS
  if run_logged "$LOG_DIR/build.log" 1800 scripts/build.sh "$BUILD_DIR" "${BUILD_OPTIONS[@]}"; then
    BUILD_OK=1
    # Set in the cache, or cmake/CudaSupport.cmake's default (nvcc's -arch=all-major).
    archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
    [[ -n $archs ]] || archs=$(grep -ohE -- '-arch=[^ ]+|arch=compute_[0-9a-z]+' "$BUILD_DIR"/build.ninja \
      "$BUILD_DIR"/CMakeFiles/rules.ninja 2>/dev/null | sed 's/^-arch=//; s/^arch=compute_//' | sort -u | paste -sd,)
    found=$(grep -o 'muster: CUDA=[A-Z]* NCCL=[A-Z]*' "$LOG_DIR/build.log" | tail -n 1)
    warnings=$(grep -c 'warning:' "$LOG_DIR/build.log")
    row build PASS "${found#muster: }, CUDA architectures ${archs:-?}, $((SECONDS - started)) s, $warnings compiler warning(s) (build.log)"
  else
    rc=$?
    # The first failed target and the first error under it (compiler, linker or CMake).
    failed_target=$(sed -n 's/^FAILED: *//p' "$LOG_DIR/build.log" | head -n 1 | sed 's/ *$//')
    first_error=$(grep -m 1 -E 'error:|CMake Error|multiple definition|undefined reference' \
      "$LOG_DIR/build.log" | sed -E 's/^ +//' | cut -c 1-200)
    row build FAIL "scripts/build.sh exited $rc${failed_target:+ at $failed_target}: ${first_error:-see build.log}"
    show_tail "$LOG_DIR/build.log"
  fi
fi

# --- 4. tests ----------------------------------------------------------------
ctest_result() {  # NAME LOG: sets RESULT and FIGURE from ctest -V's output
  local name=$1 log=$2 line status secs summary skips reason
  line=$(grep -E "Test +#[0-9]+: ${name} " "$log" | tail -n 1)
  status=$(grep -oE 'Passed|\*\*\*Skipped|\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception|Not Run' <<<"$line" | head -n 1)
  secs=$(grep -oE '[0-9.]+ sec' <<<"$line")
  # ctest -V prefixes a test's output lines with "N: ".
  local out
  out=$(sed -E 's/^[0-9]+: //' "$log")
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed|^All tests passed|^test cases:' <<<"$out" | tail -n 1)
  skips=$(grep -E '^SKIP' <<<"$out" | sed -E 's/^SKIP:? *//' | cut -c 1-140 | paste -sd ';' | sed 's/;/; /g')
  case "$status" in
    Passed)
      RESULT=PASS
      FIGURE="${summary:-passed}, $secs"
      [[ -n $skips ]] && FIGURE+="; skipped: $skips"
      # A GPU is there: a case skipped for want of one did not see it.
      if ((GPU_COUNT > 0)) && grep -qE '^SKIP.*no GPU' <<<"$out"; then
        RESULT=FAIL
        FIGURE="a GPU case skipped although nvidia-smi lists a GPU: $skips"
      fi
      ;;
    '***Skipped')
      reason=$(grep -E '^SKIP' <<<"$out" | head -n 1 | sed -E 's/^SKIP:? *//' | cut -c 1-160)
      if ((GPU_COUNT > 0)); then
        RESULT=FAIL
        FIGURE="skipped although nvidia-smi lists a GPU: ${reason:-no reason printed}"
      else
        RESULT=SKIP
        FIGURE="skipped as it should be without a GPU: ${reason:-no reason printed}"
      fi
      ;;
    '')
      RESULT=FAIL
      FIGURE="ctest printed no result for it (log: $(basename "$log"))"
      ;;
    *)
      RESULT=FAIL
      FIGURE="${status#\*\*\*} after $secs${summary:+: $summary}"
      ;;
  esac
}

say "== tests: ctest -L gpu"
if ((BUILD_OK == 0)); then
  row tests SKIP "$NOT_BUILT"
else
  GPU_TESTS=()
  mapfile -t GPU_TESTS < <(ctest --test-dir "$BUILD_DIR" -N -L gpu 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p')
  if ((${#GPU_TESTS[@]} == 0)); then
    row "tests (gpu label)" FAIL "ctest -L gpu lists no test: this build registered no GPU test"
  fi
  for name in "${GPU_TESTS[@]}"; do
    say "-- ctest -R ^$name\$"
    log="$LOG_DIR/ctest-${name//\//_}.log"
    run_logged "$log" 900 ctest --test-dir "$BUILD_DIR" -R "^${name}\$" -V --output-on-failure
    ctest_result "$name" "$log"
    row "$name" "$RESULT" "$FIGURE"
    [[ $RESULT == FAIL ]] && show_tail "$log"
  done
fi

# --- 5. weights ----------------------------------------------------------------
WEIGHTS_NOTE=""
say "== weights: muster-train over NCCL and over Gloo, same seed/steps/flags (scripts/gpu_check/train_compare.py)"
if ((BUILD_OK == 0)); then
  row "weights NCCL vs Gloo" SKIP "$NOT_BUILT"
else
  log="$LOG_DIR/weights.log"
  mkdir -p "$LOG_DIR/weights"
  rm -rf "$LOG_DIR"/weights/muster-test-*
  TMPDIR="$LOG_DIR/weights" MUSTER_BIN_DIR="$BIN" MUSTER_TEST_BIN_DIR="$BUILD_DIR/tests" \
    MUSTER_SOURCE_DIR="$ROOT" run_logged "$log" 600 "$PYTHON" scripts/gpu_check/train_compare.py
  rc=$?
  if ((rc == 0 || rc == 1)) && grep -q '^RESULT ' "$log"; then
    figure=$(sed -n 's/^RESULT //p' "$log" | awk '{
      for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      printf "%s%s rank(s): weights differ by %s relative (tolerance %s), final loss %s (NCCL) vs %s (Gloo), %s steps",
        (NR > 1 ? "; " : ""), f["nproc"], f["rel_diff"], f["tolerance"], f["loss_nccl"], f["loss_gloo"], f["steps"] }')
    WEIGHTS_NOTE=$(sed -n 's/^RESULT nproc=1 .*rel_diff=\([^ ]*\).*/weights within \1 of the CPU path/p' "$log")
    if ((rc == 0)); then
      row "weights NCCL vs Gloo" PASS "$figure"
    else
      row "weights NCCL vs Gloo" FAIL "$figure; $(grep -m 1 '^FAIL' "$log" | cut -c 1-200)"
      show_tail "$log"
    fi
  elif ((rc == 77)); then
    reason=$(sed -n 's/^SKIP: //p' "$log" | head -n 1)
    if ((GPU_COUNT > 0)); then
      row "weights NCCL vs Gloo" FAIL "muster-train refused NCCL although nvidia-smi lists a GPU: $reason"
    else
      row "weights NCCL vs Gloo" SKIP "muster-train --backend nccl refused, as it should without a GPU: $reason"
    fi
  else
    row "weights NCCL vs Gloo" FAIL "train_compare.py exited $rc: $(grep -m 1 -E '^FAIL|Error' "$log" | cut -c 1-200)"
    show_tail "$log"
  fi
fi

# --- 6. train step over NCCL -------------------------------------------------------
median() { sort -g | awk '{a[NR] = $1} END {if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
TRAIN_STEP_FAILED=""
train_step_ms() {  # BACKEND NPROC [--no-overlap]: STEP_MS, the median step time of TRAIN_STEP_REPEAT runs
  local backend=$1 nproc=$2 flag=${3:-} i log rc t times=()
  STEP_MS=""
  for ((i = 1; i <= TRAIN_STEP_REPEAT; i++)); do
    log="$LOG_DIR/train-step-$backend-x$nproc${flag:+-${flag#--}}-run$i.log"
    run_logged "$log" 180 "$BIN/muster" --standalone --nproc-per-node "$nproc" --no-python \
      "$BIN/muster-train" --backend "$backend" --steps "$TRAIN_STEP_STEPS" \
      --global-batch $((TRAIN_STEP_BATCH * nproc)) "${TRAIN_STEP_ARGS[@]}" ${flag:+"$flag"}
    rc=$?
    t=$(sed -n 's/.*step time median \([0-9.]*\) ms.*/\1/p' "$log" | head -n 1)
    if ((rc != 0)) || [[ -z $t ]]; then
      TRAIN_STEP_FAILED+="${TRAIN_STEP_FAILED:+; }$backend x$nproc${flag:+ $flag} exited $rc: $(grep -m 1 -E 'muster-train: |error' "$log" | cut -c 1-120) ($(basename "$log"))"
      return 1
    fi
    times+=("$t")
  done
  STEP_MS=$(printf '%s\n' "${times[@]}" | median)
}

# Prints NAME's SKIP row and succeeds when there is no GPU or no build.
skipped_without_gpu_or_build() {
  if ((GPU_COUNT == 0)); then
    row "$1" SKIP "$skip_reason_without_gpu"
  elif ((BUILD_OK == 0)); then
    row "$1" SKIP "the build failed"
  else
    return 1
  fi
}

say "== train step (NCCL): muster-train in train_step.sh's configuration"
if ! skipped_without_gpu_or_build "train step (NCCL)"; then
  nccl_on="" nccl_off="" gloo_one="" nccl_two=""
  say "median of $TRAIN_STEP_REPEAT runs x $TRAIN_STEP_STEPS steps: NCCL overlap on, off; Gloo (CPU)"
  train_step_ms nccl 1 && nccl_on=$STEP_MS
  train_step_ms nccl 1 --no-overlap && nccl_off=$STEP_MS
  train_step_ms gloo 1 && gloo_one=$STEP_MS
  figure="1 GPU: ${nccl_on:-?} ms/step (overlap off ${nccl_off:-?} ms); 1 CPU rank over Gloo: ${gloo_one:-?} ms"
  if ((GPU_COUNT >= 2)); then
    train_step_ms nccl 2 && nccl_two=$STEP_MS
    if [[ -n $nccl_two && -n $nccl_on ]]; then
      figure+="; 2 GPUs: $nccl_two ms/step ($(awk -v a="$nccl_two" -v b="$nccl_on" 'BEGIN {printf "%+.1f", (a / b - 1) * 100}') % vs 1 GPU)"
    fi
  fi
  figure+=" (per-rank batch $TRAIN_STEP_BATCH, hidden 512x3, features 256)"
  if [[ -z $TRAIN_STEP_FAILED ]]; then
    row "train step (NCCL)" PASS "$figure"
  else
    row "train step (NCCL)" FAIL "$TRAIN_STEP_FAILED; $figure"
  fi
  SUMMARY_NOTE="${WEIGHTS_NOTE:+$WEIGHTS_NOTE; }train step ${nccl_on:-?} ms on 1 GPU vs ${gloo_one:-?} ms on 1 CPU rank"
fi

# --- 7. re-forming an NCCL communicator in place ------------------------------------
say "== reform (NCCL): interrupt, shrink, new communicator"
if ! skipped_without_gpu_or_build "reform (NCCL)"; then
  log="$LOG_DIR/reform.log"
  run_logged "$log" 300 "$PYTHON" scripts/bench/comm_reform.py --backend nccl --runs 5 \
    --torch none --bin-dir "$BUILD_DIR/tests"
  rc=$?
  figure=$(grep -E '^\| (interrupt|shrink|new)' "$log" | sed 's/^| //; s/ |$//; s/ | /: /' | paste -sd ';' -)
  if ((rc == 0)) && grep -q '^| shrink .*| refused' "$log"; then
    # Every survivor refused its child and re-created: clean, but no shrink.
    # Ranks that share a GPU (distinct host ids over sockets) are the only
    # way to run 3 on fewer GPUs; with a GPU per rank it must shrink.
    if ((GPU_COUNT < 3)); then
      row "reform (NCCL)" SKIP "3 ranks on $GPU_COUNT GPU(s): NCCL refused the shrink of ranks sharing a GPU, cleanly (all survivors re-created); $figure"
    else
      row "reform (NCCL)" FAIL "3 ranks on $GPU_COUNT GPUs: the shrink was refused; $figure"
    fi
  elif ((rc == 0)); then
    row "reform (NCCL)" PASS "3 -> 2 ranks, median of 5: $figure"
  else
    row "reform (NCCL)" FAIL "comm_reform.py exited $rc: $(grep -m 1 -E 'comm_reform|Error' "$log" | cut -c 1-200)"
  fi
fi

# --- 8. warm workers: CUDA initialised after the fork --------------------------------
WARM_REPEAT=3
WARM_FAILED=""
warm_run() {  # MODE RUN NPROC FLAG...: one muster run of warm_cuda.py; sets WARM_TTG, WARM_SYNC
  local mode=$1 run=$2 nproc=$3 log t0 rc stats ranks forked
  shift 3
  WARM_TTG="" WARM_SYNC=""
  log="$LOG_DIR/warm-$mode-run$run.log"
  t0=$(date +%s.%N)
  MUSTER_LOG_LEVEL=info run_logged "$log" 120 "$BIN/muster" --standalone --nproc-per-node "$nproc" \
    --python "$PYTHON" "$@" scripts/gpu_check/warm_cuda.py
  rc=$?
  # Each rank's line: WARM_CUDA {"rank": R, ..., "forked_warm": true, ..., "t_sync": EPOCH, ...}
  stats=$(awk -v t0="$t0" '/WARM_CUDA \{/ {
      s = substr($0, index($0, "WARM_CUDA {") + 11); gsub(/[{}" ]/, "", s)
      n = split(s, kv, ","); split("", f)
      for (i = 1; i <= n; i++) { split(kv[i], p, ":"); f[p[1]] = p[2] }
      if (!(f["rank"] in seen)) { seen[f["rank"]] = 1; ranks++ }
      if (f["forked_warm"] == "true") forked++
      if (f["t_sync"] + 0 > last) last = f["t_sync"] + 0
      if (f["first_to_sync_s"] + 0 > sync) sync = f["first_to_sync_s"] + 0 }
    END { printf "%d %d %.3f %.3f\n", ranks, forked, (ranks ? last - t0 : 0), sync }' "$log")
  read -r ranks forked WARM_TTG WARM_SYNC <<<"$stats"
  local why=""
  if ((rc != 0 || ranks != nproc)); then
    why="exited $rc, $ranks of $nproc ranks did the CUDA work: $(grep -m 1 -E 'warm_cuda.py: |Error|muster: error' "$log" | cut -c 1-160)"
  elif [[ $mode == warm ]] && grep -q 'event=warm_fallback' "$log"; then
    why="$(grep -m 1 -o 'event=warm_fallback.*' "$log" | cut -c 1-160)"
  elif [[ $mode == warm ]] && ((forked != nproc)); then
    why="$forked of $nproc workers forked warm"
  elif [[ $mode == cold ]] && ((forked != 0)); then
    why="$forked of $nproc workers forked warm with --no-warm-workers"
  fi
  if [[ -n $why ]]; then
    WARM_FAILED+="${WARM_FAILED:+; }$mode run $run $why ($(basename "$log"))"
    show_tail "$log"
    return 1
  fi
}

say "== warm: workers forked from the warm process initialise CUDA (scripts/gpu_check/warm_cuda.py)"
if ! skipped_without_gpu_or_build "warm"; then
  warm_nproc=$((GPU_COUNT < 2 ? 2 : GPU_COUNT))
  warm_flags=()
  "$PYTHON" -c 'import torch' >/dev/null 2>&1 && warm_flags=(--warm-import torch)
  say "$warm_nproc ranks on $GPU_COUNT GPU(s), warm and --no-warm-workers alternated $WARM_REPEAT times${warm_flags[*]:+ (${warm_flags[*]})}"
  warm_ttg=() cold_ttg=() warm_sync=() cold_sync=()
  for ((i = 1; i <= WARM_REPEAT; i++)); do
    warm_run warm "$i" "$warm_nproc" "${warm_flags[@]}" || break
    warm_ttg+=("$WARM_TTG") warm_sync+=("$WARM_SYNC")
    warm_run cold "$i" "$warm_nproc" --no-warm-workers "${warm_flags[@]}" || break
    cold_ttg+=("$WARM_TTG") cold_sync+=("$WARM_SYNC")
  done
  w=$( ((${#warm_ttg[@]})) && printf '%s\n' "${warm_ttg[@]}" | median)
  c=$( ((${#cold_ttg[@]})) && printf '%s\n' "${cold_ttg[@]}" | median)
  ws=$( ((${#warm_sync[@]})) && printf '%s\n' "${warm_sync[@]}" | median)
  cs=$( ((${#cold_sync[@]})) && printf '%s\n' "${cold_sync[@]}" | median)
  ready=$(grep -h -m 1 -o 'imports=\[[^]]*\].*import_seconds=[0-9.]*' "$LOG_DIR"/warm-warm-run1.log 2>/dev/null |
    sed -E 's/imports=\[([^]]*)\].* import_seconds=([0-9.]*)/warm process imported [\1] in \2 s/')
  figure="$warm_nproc ranks on $GPU_COUNT GPU(s), median of ${#warm_ttg[@]}/${#cold_ttg[@]}: muster start to the last rank's cudaDeviceSynchronize warm ${w:-?} s vs cold ${c:-?} s"
  if [[ -n $w && -n $c ]]; then
    figure+=" ($(awk -v a="$w" -v b="$c" 'BEGIN {printf "%+.1f", (a / b - 1) * 100}') %$(awk -v a="$w" -v b="$c" 'BEGIN {if (a >= b) printf "; warm NOT faster"}'))"
  fi
  figure+="; script's first line to synchronize (slowest rank) warm ${ws:-?} s, cold ${cs:-?} s${ready:+; $ready}"
  if [[ -z $WARM_FAILED ]]; then
    row "warm" PASS "every worker forked warm initialised CUDA; $figure"
  else
    row "warm" FAIL "$WARM_FAILED; $figure"
  fi
  [[ -n $w && -n $c ]] && SUMMARY_NOTE+="${SUMMARY_NOTE:+; }first GPU work $w s warm vs $c s cold"
fi

# --- 9. the muster Python package in place over NCCL ------------------------------
say "== in place (NCCL): the muster package recovers a torch job in place (scripts/gpu_check/nccl_in_place.py)"
if ! skipped_without_gpu_or_build "in place (NCCL)"; then
  if ! "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    row "in place (NCCL)" SKIP "$PYTHON has no CUDA-enabled torch"
  else
    ip_nproc=$((GPU_COUNT < 2 ? 2 : GPU_COUNT))
    ip_dir="$LOG_DIR/in-place"
    mkdir -p "$ip_dir"
    ip_run() {  # NAME FLAG...: one muster run of nccl_in_place.py, 30 steps
      local name=$1
      shift
      PYTHONPATH="$ROOT/python" MUSTER_LOG_LEVEL=info run_logged "$LOG_DIR/in-place-$name.log" 240 \
        "$BIN/muster" --nproc-per-node "$ip_nproc" --python "$PYTHON" "$@" \
        scripts/gpu_check/nccl_in_place.py --steps 30 --log "$ip_dir/$name.steps" --sleep 0.05
    }
    ip_run fault-free
    ip_run kill --max-restarts 2 --inject kill-worker,rank=1,step=12
    diff=$("$PYTHON" - "$ip_dir/fault-free.steps.weights" "$ip_dir/kill.steps.weights" <<'PY' 2>&1
import struct, sys
def weights(path):
    data = open(path, "rb").read()
    return struct.unpack(f"<{len(data) // 4}f", data)
a, b = weights(sys.argv[1]), weights(sys.argv[2])
print(f"{max(abs(x - y) for x, y in zip(a, b)):.2e}" if len(a) == len(b) else "different sizes")
PY
)
    log="$LOG_DIR/in-place-kill.log"
    kept=$(awk '$2 == 0 {print $4}' "$ip_dir/kill.steps" 2>/dev/null | sort -u | wc -l)
    recovered=$(grep -m 1 -o 'event=in_place_recovered.*' "$log" | cut -c 1-80)
    if [[ -n $recovered ]] && ((kept == 1)) && awk -v d="$diff" 'BEGIN {exit !(d + 0 <= 1e-5)}'; then
      row "in place (NCCL)" PASS "$ip_nproc ranks on $GPU_COUNT GPU(s), rank 1 SIGKILLed at step 12: $recovered; rank 0 kept its process; weights within $diff of the fault-free run"
    else
      why=$(grep -m 1 -o -E 'event=in_place_fallback.*|NCCL abort did not return.*' "$log" | cut -c 1-160)
      row "in place (NCCL)" FAIL "${why:-no in-place recovery} (rank 0 ran as $kept process(es); weights diff ${diff:-?}; logs in-place-*.log)"
      show_tail "$log"
    fi
  fi
fi

# --- 10. allreduce over NCCL --------------------------------------------------------
say "== allreduce (NCCL)"
row "allreduce (NCCL)" SKIP "not measured: scripts/bench has no NCCL allreduce benchmark (allreduce.sh times host buffers over Gloo; allreduce_bench_worker refuses --backend nccl)"

# --- the end ---------------------------------------------------------------------
if (($(failed_rows) > 0)); then
  finish 1
elif ((GPU_COUNT == 0)); then
  finish 77
fi
finish 0

# shellcheck shell=bash
# Builds that run behind the test stages. The builds a run needs later (the
# Release, sanitizer and fuzz builds) start one after another in one
# background chain at nice 19 when the suite starts, so they take only the
# CPU that the tests leave idle, and a test keeps its priority over every
# compiler. The stage that needs a build waits for it there, and prints its
# log. Sourced by scripts/test.sh after scripts/lib/stage_table.sh.
#
#   build_chain_start LOG_DIR NAME...
#       Runs the shell function build_NAME for each NAME, in order, in the
#       background at nice 19. Each build's output goes to LOG_DIR/NAME.log;
#       when it ends, LOG_DIR/NAME.done holds "EXIT_CODE SECONDS VERDICT",
#       SECONDS its own wall time and VERDICT what build_cache_verdict said
#       of it (cold or warm). A failed build does not stop the chain.
#   build_chain_await NAME
#       Waits for NAME's build, prints its log and its own time, sets the
#       stage's budget from the verdict (BUILD_BUDGET_COLD / _WARM[NAME]),
#       and returns its exit code. Fails, saying so, when the chain died
#       before building NAME.
#   build_chain_stop
#       Kills the chain and every process under it (the exit trap calls it,
#       so an interrupted or failed run leaves no compiler behind).
#   build_cache_start / build_cache_verdict
#       Around a build: "cold" when at least half of its compiles missed
#       the compiler cache (or there is no cache), else "warm".
#
# Needs BUILD_BUDGET_COLD and BUILD_BUDGET_WARM, associative arrays from a
# stage's name to its budget in seconds (0 or absent: none).

BUILD_CHAIN_PID=""
BUILD_CHAIN_DIR=""

# ccache's counters of compiles served and missed, as "HITS MISSES".
build_cache_counts() {
  if [[ ${MUSTER_CCACHE:-1} == 0 || ${CCACHE_DISABLE:-} =~ ^(1|true|yes)$ ]] ||
    ! command -v ccache >/dev/null 2>&1; then
    echo "0 0"
    return
  fi
  ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hits += $2 }
    $1 == "cache_miss" { misses += $2 }
    END { printf "%d %d\n", hits, misses }'
}

BUILD_CACHE_BEFORE="0 0"
build_cache_start() {
  BUILD_CACHE_BEFORE=$(build_cache_counts)
}

build_cache_verdict() {
  local hits0 misses0 hits1 misses1
  read -r hits0 misses0 <<<"$BUILD_CACHE_BEFORE"
  read -r hits1 misses1 <<<"$(build_cache_counts)"
  local hits=$((hits1 - hits0)) misses=$((misses1 - misses0))
  if ((hits + misses == 0 || 2 * misses >= hits + misses)); then
    echo cold
  else
    echo warm
  fi
}

build_chain_start() {
  BUILD_CHAIN_DIR=$1
  shift
  mkdir -p "$BUILD_CHAIN_DIR"
  local name
  for name in "$@"; do rm -f "$BUILD_CHAIN_DIR/$name.log" "$BUILD_CHAIN_DIR/$name.done"; done
  local parent=$$
  (
    renice -n 19 -p "$BASHPID" >/dev/null
    for name in "$@"; do
      # A script killed outright (SIGKILL: no exit trap) leaves the chain
      # to end after the build under way, not to start the next.
      kill -0 "$parent" 2>/dev/null || exit 0
      start=$SECONDS
      build_cache_start
      set +e
      (
        set -e
        "build_$name"
      ) >"$BUILD_CHAIN_DIR/$name.log" 2>&1
      rc=$?
      set -e
      # Written whole, then renamed: a waiter never reads half a line.
      echo "$rc $((SECONDS - start)) $(build_cache_verdict)" >"$BUILD_CHAIN_DIR/$name.done.tmp"
      mv "$BUILD_CHAIN_DIR/$name.done.tmp" "$BUILD_CHAIN_DIR/$name.done"
    done
  ) &
  BUILD_CHAIN_PID=$!
}

build_chain_await() {
  local name=$1 rc seconds verdict
  while [[ ! -f "$BUILD_CHAIN_DIR/$name.done" ]]; do
    if ! kill -0 "$BUILD_CHAIN_PID" 2>/dev/null; then
      cat "$BUILD_CHAIN_DIR/$name.log" 2>/dev/null
      echo "build_chain: the background builds ended before $name was built" >&2
      return 1
    fi
    sleep 1
  done
  cat "$BUILD_CHAIN_DIR/$name.log"
  read -r rc seconds verdict <"$BUILD_CHAIN_DIR/$name.done"
  echo "build_chain: $name built in $(stage_clock "$seconds") behind the earlier stages ($verdict cache)"
  build_stage_verdict "$verdict" "own $(stage_clock "$seconds"), $verdict"
  return "$rc"
}

# VERDICT NOTE: the current stage's note, and its budget for that verdict.
build_stage_verdict() {
  stage_note "$STAGE_CURRENT" "$2"
  if [[ $1 == cold ]]; then
    stage_budget "$STAGE_CURRENT" "${BUILD_BUDGET_COLD[$STAGE_CURRENT]:-0}"
  else
    stage_budget "$STAGE_CURRENT" "${BUILD_BUDGET_WARM[$STAGE_CURRENT]:-0}"
  fi
}

# Every descendant of PID, deepest first.
build_chain_descendants() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    build_chain_descendants "$child"
    echo "$child"
  done
}

build_chain_stop() {
  [[ -n $BUILD_CHAIN_PID ]] || return 0
  local pids
  # Stop the chain first, so that it starts nothing new, then list and
  # kill what it ran.
  kill -STOP "$BUILD_CHAIN_PID" 2>/dev/null
  pids=$(build_chain_descendants "$BUILD_CHAIN_PID")
  # shellcheck disable=SC2086  # one pid a word
  kill -TERM $pids "$BUILD_CHAIN_PID" 2>/dev/null
  kill -CONT "$BUILD_CHAIN_PID" 2>/dev/null
  wait "$BUILD_CHAIN_PID" 2>/dev/null
  BUILD_CHAIN_PID=""
}

# shellcheck shell=bash
# Shared shell of the benchmarks that drive a real musterd with rdzv_load
# (rdzv_scale.sh, status_page_scale.sh). Sourced, not run; the caller sets
# ROOT (the source tree), BUILD (the build directory) and WORK (a scratch
# directory it removes), and calls musterd_bench_stop from its EXIT trap.
#
#   musterd_bench_build TARGET...   configures BUILD (Release, benchmarks on)
#                                   and builds the targets
#   musterd_bench_raise_nofile N    raises `ulimit -n` to its hard limit; exits
#                                   1 when that is below N + 100 (each side
#                                   holds one descriptor per agent)
#   musterd_bench_start NAME ARG... starts $BUILD/bin/musterd --host 127.0.0.1
#                                   --port 0 ARG..., its log in $WORK/NAME.log;
#                                   sets DAEMON_PID, DAEMON_PORT and, with
#                                   --metrics-port among ARG, METRICS_PORT
#   musterd_bench_stop              stops the daemon, if one runs

musterd_bench_build() {
  if [[ ! -f "$BUILD/build.ninja" ]]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DMUSTER_WERROR=ON -DMUSTER_CUDA=off \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  # The benchmark helpers are built only where asked for (MUSTER_BUILD_BENCHMARKS).
  cmake "$BUILD" -DMUSTER_BUILD_BENCHMARKS=ON >/dev/null
  # Quiet when it builds; a failure shows the compiler's words (ninja prints
  # them on stdout), not a silent exit.
  local out
  if ! out=$(cmake --build "$BUILD" --target "$@" 2>&1); then
    printf '%s\n' "$out" | tail -n 30 >&2
    echo "musterd_bench.sh: building $* in $BUILD failed" >&2
    return 1
  fi
}

musterd_bench_raise_nofile() {
  local need=$(($1 + 100)) hard
  hard=$(ulimit -Hn)
  [[ "$hard" == unlimited ]] && hard=65536
  ulimit -n "$hard"
  if (( $(ulimit -n) < need )); then
    echo "$(basename "$0"): ulimit -n is $(ulimit -n) (hard limit), need $need" >&2
    exit 1
  fi
}

DAEMON_PID=""
DAEMON_PORT=""
METRICS_PORT=""
musterd_bench_start() {
  local name=$1
  shift
  local log="$WORK/$name.log"
  # Made here, not by the background redirection, so the first read finds it.
  : >"$WORK/musterd.out"
  "$BUILD/bin/musterd" --host 127.0.0.1 --port 0 "$@" >"$WORK/musterd.out" 2>"$log" &
  DAEMON_PID=$!
  DAEMON_PORT=""
  METRICS_PORT=""
  for _ in $(seq 100); do
    DAEMON_PORT=$(sed -n 's/^musterd listening on .*:\([0-9]*\)$/\1/p' "$WORK/musterd.out")
    [[ -n "$DAEMON_PORT" ]] && break
    sleep 0.05
  done
  if [[ -z "$DAEMON_PORT" ]]; then
    echo "$(basename "$0"): musterd did not start:" >&2
    cat "$log" >&2
    exit 1
  fi
  # The metrics port is logged before the rendezvous port is printed.
  # shellcheck disable=SC2034  # read by the callers
  METRICS_PORT=$(sed -n 's/.*event=metrics_listening port=\([0-9]*\).*/\1/p' "$log" | head -n 1)
}

musterd_bench_stop() {
  [[ -n "$DAEMON_PID" ]] || return 0
  # SIGTERM first; a daemon busy with a backlog may not get to its signal handler.
  kill -TERM "$DAEMON_PID" 2>/dev/null || true
  for _ in $(seq 20); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$DAEMON_PID" 2>/dev/null || true
  wait "$DAEMON_PID" 2>/dev/null || true
  DAEMON_PID=""
}

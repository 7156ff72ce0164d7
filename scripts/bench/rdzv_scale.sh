#!/usr/bin/env bash
# Rendezvous "Scale" benchmark: N simulated agents (rdzv_load) join ONE run on
# a real musterd over loopback (--nnodes N:N, so the round closes at MAX) and
# heart-beat every keep_alive_interval (0.5 s, the default), spread evenly
# over the interval. A fresh daemon per N. Measured per N:
#   - last Join sent -> round closed (every agent has its AssignmentMessage),
#     and last Join -> first assignment;
#   - daemon CPU (utime+stime from /proc/PID/stat, % of one core) over
#     --steady-seconds of steady heart-beating, after the daemon has caught up;
#   - daemon VmRSS / VmHWM (/proc/PID/status) at the end.
# Targets at 10k nodes: round closed <= 1 s after the last join, heart-beat
# handling <= 25% of one core, RSS <= 200 MiB.
#
# --tls on runs every agent over mutual TLS (musterd --tls-cert/--tls-key/
# --tls-client-ca, each simulated agent presenting a client certificate and
# verifying the daemon's against 127.0.0.1; certificates made by
# tls_certs.sh in a temporary directory). --tls both alternates a plain and a
# mutual-TLS run for each repeat of each N (which goes first alternates too),
# and prints the TLS/plain ratio of each metric's median. Targets over mutual
# TLS at 10k: round closed <= 2 s after the last join, <= 35% of one core,
# RSS <= 300 MiB; plain runs keep theirs. Default: off (plain only).
#
# There is no reference implementation to compare against: torchrun's c10d
# rendezvous cannot be driven with 10k agents on one machine, so these are
# absolute numbers against the targets only. The load generator shares the
# machine with the daemon (its own CPU share is printed too), and wall times
# swell when other work runs; the 1-minute load average is printed with each row.
#
# These machines are shared and noisy (the same build measures a few points
# apart from run to run), so --repeat K runs each N K times, and the 10k
# verdict is on the median of the runs; every run is printed.
#
# Usage: scripts/bench/rdzv_scale.sh [--build-dir DIR] [--nodes "1000 4000 10000"]
#                                    [--steady-seconds S] [--repeat K] [--json FILE]
#                                    [--tls off|on|both]
# Exits 1 when a run failed (an agent refused or dropped) or a 10k target was
# missed (by the median, per mode).
# Builds the rdzv_load target (scripts/bench/CMakeLists.txt, MUSTER_BUILD_BENCHMARKS=ON).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="$ROOT/build-bench"
NODES="1000 4000 10000"
STEADY=10
REPEAT=1
JSON_OUT=""
TLS=off
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --steady-seconds) STEADY=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    --tls) TLS=$2; shift 2 ;;
    -h|--help) sed -n '2,38p' "$0"; exit 0 ;;
    *) echo "rdzv_scale.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

case "$TLS" in
  off) MODES_FIRST=(plain) ;;
  on) MODES_FIRST=(tls) ;;
  both) MODES_FIRST=(plain tls) ;;
  *) echo "rdzv_scale.sh: --tls '$TLS' must be off, on or both" >&2; exit 2 ;;
esac

if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DMUSTER_WERROR=ON -DMUSTER_CUDA=off -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
# The benchmark helpers are built only where asked for (MUSTER_BUILD_BENCHMARKS).
cmake "$BUILD" -DMUSTER_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$BUILD" --target musterd rdzv_load >/dev/null

# Each side holds one descriptor per agent.
hard=$(ulimit -Hn)
[[ "$hard" == unlimited ]] && hard=65536
ulimit -n "$hard"
max_nodes=0
for n in $NODES; do (( n > max_nodes )) && max_nodes=$n; done
if (( $(ulimit -n) < max_nodes + 100 )); then
  echo "rdzv_scale.sh: ulimit -n is $(ulimit -n) (hard limit), need $((max_nodes + 100))" >&2
  exit 1
fi

WORK=$(mktemp -d)
DAEMON_PID=""
stop_daemon() {
  [[ -n "$DAEMON_PID" ]] || return 0
  # SIGTERM first; a daemon busy with a backlog may not get to its signal handler.
  kill -TERM "$DAEMON_PID" 2>/dev/null || true
  for _ in $(seq 20); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$DAEMON_PID" 2>/dev/null || true
  wait "$DAEMON_PID" 2>/dev/null || true
  DAEMON_PID=""
}
trap 'stop_daemon; rm -rf "$WORK"' EXIT
[[ "$TLS" == off ]] || "$ROOT/scripts/bench/tls_certs.sh" "$WORK"

: > "$WORK/results.jsonl"
if ! [[ "$REPEAT" =~ ^[1-9][0-9]*$ ]]; then
  echo "rdzv_scale.sh: --repeat '$REPEAT' must be a positive integer" >&2
  exit 2
fi
# One run of N agents against a fresh daemon; mode plain or tls.
run_once() {
  local n=$1 mode=$2 daemon_tls=() load_tls=()
  if [[ "$mode" == tls ]]; then
    daemon_tls=(--tls-cert "$WORK/musterd.pem" --tls-key "$WORK/musterd.key"
                --tls-client-ca "$WORK/ca.pem")
    load_tls=(--tls-ca "$WORK/ca.pem" --tls-cert "$WORK/agent.pem" --tls-key "$WORK/agent.key")
  fi
  local log="$WORK/musterd.$n.$mode.log"
  "$BUILD/bin/musterd" --host 127.0.0.1 --port 0 ${daemon_tls[@]+"${daemon_tls[@]}"} \
    >"$WORK/musterd.out" 2>"$log" &
  DAEMON_PID=$!
  port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/^musterd listening on .*:\([0-9]*\)$/\1/p' "$WORK/musterd.out")
    [[ -n "$port" ]] && break
    sleep 0.05
  done
  if [[ -z "$port" ]]; then
    echo "rdzv_scale.sh: musterd did not start:" >&2
    cat "$log" >&2
    exit 1
  fi
  # rdzv_load's default interval is musterd's default keep_alive_interval.
  if ! "$BUILD/bin/rdzv_load" --host 127.0.0.1 --port "$port" --nodes "$n" \
      --steady-seconds "$STEADY" --musterd-pid "$DAEMON_PID" ${load_tls[@]+"${load_tls[@]}"} \
      >>"$WORK/results.jsonl"; then
    echo "rdzv_scale.sh: run with $n nodes ($mode) failed: $(tail -n 1 "$WORK/results.jsonl")" >&2
    grep -E ' (warning|error): ' "$log" | head -n 5 >&2 || true
  fi
  stop_daemon
}

for n in $NODES; do
 for k in $(seq "$REPEAT"); do
  modes=("${MODES_FIRST[@]}")
  if (( ${#modes[@]} == 2 && k % 2 == 0 )); then modes=(tls plain); fi
  for mode in "${modes[@]}"; do run_once "$n" "$mode"; done
 done
done

[[ -n "$JSON_OUT" ]] && cp "$WORK/results.jsonl" "$JSON_OUT"

/usr/bin/python3 - "$WORK/results.jsonl" "$TLS" <<'EOF'
import json, sys

def fmt(value, spec, suffix=""):
    return "n/a" if value is None else format(value, spec) + suffix

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
with_tls = sys.argv[2] != "off"
MODE = {False: "plain", True: "mutual TLS"}
print(("| nodes | mode " if with_tls else "| nodes ") +
      "| last join → round closed | last join → first assignment "
      "| daemon CPU (% of one core) while heart-beating | of which kernel | daemon RSS (VmRSS / VmHWM) "
      "| heartbeats/s sent / acked | load gen CPU | load avg |")
print("|---:" + ("|:---" if with_tls else "") + "|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    cpu = fmt(r.get("daemon_cpu_pct"), ".1f", " %")
    if r.get("daemon_kept_up") is False:
        cpu += " (fell behind: a floor)"
    note = "" if r.get("ok") else f" — FAILED: {r.get('error')}"
    mode = f"| {MODE[bool(r.get('tls'))]} " if with_tls else ""
    print(f"| {r['nodes']}{note} {mode}"
          f"| {fmt(r.get('last_join_to_last_assignment_ms'), '.0f', ' ms')} "
          f"| {fmt(r.get('last_join_to_first_assignment_ms'), '.0f', ' ms')} "
          f"| {cpu} "
          f"| {fmt(r.get('daemon_cpu_sys_pct'), '.1f', ' %')} "
          f"| {fmt(r.get('daemon_vmrss_mib'), '.1f')} / {fmt(r.get('daemon_vmhwm_mib'), '.1f', ' MiB')} "
          f"| {fmt(r.get('heartbeats_sent_per_s'), '.0f')} / {fmt(r.get('acks_per_s'), '.0f')} "
          f"| {fmt(r.get('loadgen_cpu_pct'), '.1f', ' %')} "
          f"| {fmt(r.get('loadavg_1m'), '.1f')} |")
print()
# Per mode: round closed (ms), daemon CPU (% of one core), RSS (MiB) at 10k.
TARGETS = {False: (1000, 25, 200), True: (2000, 35, 300)}
modes = sorted({bool(r.get("tls")) for r in rows})
for tls in modes:
    close, cpu, rss = TARGETS[tls]
    print(f"Targets at 10k nodes{' (' + MODE[tls] + ')' if with_tls else ''}: round closed "
          f"≤ {close} ms after the last join; daemon CPU ≤ {cpu} % of one core; RSS ≤ {rss} MiB.")
failed = [r["nodes"] for r in rows if not r.get("ok")]

def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

def medians(runs):
    """The median round closed (ms), daemon CPU (%) and VmHWM (MiB) of `runs`."""
    # A run whose daemon fell behind has no valid CPU figure: it counts as a miss.
    return (median([r.get("last_join_to_last_assignment_ms") or 1e9 for r in runs]),
            median([(r.get("daemon_cpu_pct") or 1e9) if r.get("daemon_kept_up") else 1e9
                    for r in runs]),
            median([r.get("daemon_vmhwm_mib") or 1e9 for r in runs]))

missed = []
verdicts = []
for tls in modes:
    runs = [r for r in rows if r["nodes"] == 10000 and r.get("ok") and bool(r.get("tls")) == tls]
    label = " " + MODE[tls] if with_tls else ""
    if not runs:
        verdicts.append(f"{MODE[tls]}: not run")
        continue
    close_ms, cpu, hwm = medians(runs)
    if len(runs) > 1:
        print(f"10k{label}, median of {len(runs)} runs: "
              f"round closed {close_ms:.0f} ms, daemon CPU {cpu:.1f} %, VmHWM {hwm:.1f} MiB")
    close_target, cpu_target, rss_target = TARGETS[tls]
    mode_missed = [what for what, over in (("round close", close_ms > close_target),
                                           ("heart-beat CPU", cpu > cpu_target),
                                           ("RSS", hwm > rss_target)) if over]
    missed += [what + label for what in mode_missed]
    verdicts.append(f"{MODE[tls]}: " + ("MISSED: " + ", ".join(mode_missed) if mode_missed
                                         else "met"))

if sys.argv[2] == "both":
    # Each metric's median over the mutual-TLS runs against the plain ones, per N.
    print()
    print("| nodes | round closed, TLS / plain | daemon CPU, TLS / plain | VmHWM, TLS / plain "
          "| TLS handshake, median agent |")
    print("|---:|---:|---:|---:|---:|")
    for n in sorted({r["nodes"] for r in rows}):
        plain = [r for r in rows if r["nodes"] == n and r.get("ok") and not r.get("tls")]
        tls = [r for r in rows if r["nodes"] == n and r.get("ok") and r.get("tls")]
        if not plain or not tls:
            print(f"| {n} | n/a | n/a | n/a | n/a |")
            continue
        p, t = medians(plain), medians(tls)
        handshake = median([(r.get("phase_ms") or {}).get("tls_handshake") or 0 for r in tls])
        print(f"| {n} | {t[0]:.0f} / {p[0]:.0f} ms = {t[0] / p[0]:.2f}× "
              f"| {t[1]:.1f} / {p[1]:.1f} % = {t[1] / p[1]:.2f}× "
              f"| {t[2]:.1f} / {p[2]:.1f} MiB = {t[2] / p[2]:.2f}× | {handshake:.0f} ms |")
    print()

if with_tls:
    print("10k targets: " + "; ".join(verdicts))
else:
    print("10k targets: " + ("MISSED: " + ", ".join(missed) if missed else
                             "met" if verdicts and verdicts[0].endswith("met") else "not run"))
sys.exit(1 if failed or missed else 0)
EOF

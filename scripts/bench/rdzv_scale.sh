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
# --progress on makes every simulated agent's heartbeats carry its step
# (Heartbeat::step, 10 steps a second once assigned), as agents whose workers
# report progress do: musterd then keeps each node's step rate and judges
# stragglers once a second. --progress both runs each N with and without, in
# the same invocation (which goes first alternates with each repeat), and
# prints the with/without ratio of each metric's median; the 10k targets are
# the same with progress. Default: off.
#
# --compute-ranks R (with progress on): every other heartbeat also carries R
# ranks' compute times per step (Heartbeat::compute_us, about once a second,
# as agents whose workers report them send; those heartbeats take the
# daemon's general decoding path), and musterd judges every rank once a
# second. Default: 0, none.
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
#                                    [--tls off|on|both] [--progress off|on|both]
#                                    [--compute-ranks R]
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
PROGRESS=off
PROGRESS_RATE=10  # steps per second each simulated node reports with --progress
COMPUTE_RANKS=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --steady-seconds) STEADY=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    --tls) TLS=$2; shift 2 ;;
    --progress) PROGRESS=$2; shift 2 ;;
    --compute-ranks) COMPUTE_RANKS=$2; shift 2 ;;
    -h|--help) sed -n '2,53p' "$0"; exit 0 ;;
    *) echo "rdzv_scale.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

case "$TLS" in
  off) MODES_FIRST=(plain) ;;
  on) MODES_FIRST=(tls) ;;
  both) MODES_FIRST=(plain tls) ;;
  *) echo "rdzv_scale.sh: --tls '$TLS' must be off, on or both" >&2; exit 2 ;;
esac

case "$PROGRESS" in
  off) PROGRESS_FIRST=(off) ;;
  on) PROGRESS_FIRST=(on) ;;
  both) PROGRESS_FIRST=(off on) ;;
  *) echo "rdzv_scale.sh: --progress '$PROGRESS' must be off, on or both" >&2; exit 2 ;;
esac

# shellcheck source=scripts/bench/musterd_bench.sh
source "$ROOT/scripts/bench/musterd_bench.sh"
musterd_bench_build musterd rdzv_load
max_nodes=0
for n in $NODES; do (( n > max_nodes )) && max_nodes=$n; done
musterd_bench_raise_nofile "$max_nodes"

WORK=$(mktemp -d)
trap 'musterd_bench_stop; rm -rf "$WORK"' EXIT
[[ "$TLS" == off ]] || "$ROOT/scripts/bench/tls_certs.sh" "$WORK"

: > "$WORK/results.jsonl"
if ! [[ "$REPEAT" =~ ^[1-9][0-9]*$ ]]; then
  echo "rdzv_scale.sh: --repeat '$REPEAT' must be a positive integer" >&2
  exit 2
fi
# One run of N agents against a fresh daemon; mode plain or tls; progress off or on.
run_once() {
  local n=$1 mode=$2 progress=$3 daemon_tls=() load_tls=() load_progress=()
  [[ "$progress" == on ]] && load_progress=(--progress-steps-per-second "$PROGRESS_RATE"
                                            --compute-ranks "$COMPUTE_RANKS")
  if [[ "$mode" == tls ]]; then
    daemon_tls=(--tls-cert "$WORK/musterd.pem" --tls-key "$WORK/musterd.key"
                --tls-client-ca "$WORK/ca.pem")
    load_tls=(--tls-ca "$WORK/ca.pem" --tls-cert "$WORK/agent.pem" --tls-key "$WORK/agent.key")
  fi
  local name="musterd.$n.$mode.$progress" log="$WORK/musterd.$n.$mode.$progress.log"
  musterd_bench_start "$name" ${daemon_tls[@]+"${daemon_tls[@]}"}
  port=$DAEMON_PORT
  # rdzv_load's default interval is musterd's default keep_alive_interval.
  if ! "$BUILD/bin/rdzv_load" --host 127.0.0.1 --port "$port" --nodes "$n" \
      --steady-seconds "$STEADY" --musterd-pid "$DAEMON_PID" ${load_tls[@]+"${load_tls[@]}"} \
      ${load_progress[@]+"${load_progress[@]}"} >>"$WORK/results.jsonl"; then
    echo "rdzv_scale.sh: run with $n nodes ($mode, progress $progress) failed: $(tail -n 1 "$WORK/results.jsonl")" >&2
    grep -E ' (warning|error): ' "$log" | head -n 5 >&2 || true
  fi
  musterd_bench_stop
}

for n in $NODES; do
 for k in $(seq "$REPEAT"); do
  modes=("${MODES_FIRST[@]}")
  if (( ${#modes[@]} == 2 && k % 2 == 0 )); then modes=(tls plain); fi
  progresses=("${PROGRESS_FIRST[@]}")
  if (( ${#progresses[@]} == 2 && k % 2 == 0 )); then progresses=(on off); fi
  for mode in "${modes[@]}"; do
    for progress in "${progresses[@]}"; do run_once "$n" "$mode" "$progress"; done
  done
 done
done

[[ -n "$JSON_OUT" ]] && cp "$WORK/results.jsonl" "$JSON_OUT"

/usr/bin/python3 - "$WORK/results.jsonl" "$TLS" "$PROGRESS" <<'EOF'
import json, sys

def fmt(value, spec, suffix=""):
    return "n/a" if value is None else format(value, spec) + suffix

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
with_tls = sys.argv[2] != "off"
with_progress = sys.argv[3] != "off"
MODE = {False: "plain", True: "mutual TLS"}

def mode_of(r):
    """A run's mode: (TLS, progress)."""
    return bool(r.get("tls")), bool(r.get("progress"))

def label(mode):
    tls, progress = mode
    parts = ([MODE[tls]] if with_tls else []) + (
        ["with progress" if progress else "no progress"] if with_progress else [])
    return ", ".join(parts)

with_modes = with_tls or with_progress
print(("| nodes | mode " if with_modes else "| nodes ") +
      "| last join → round closed | last join → first assignment "
      "| daemon CPU (% of one core) while heart-beating | of which kernel | daemon RSS (VmRSS / VmHWM) "
      "| heartbeats/s sent / acked | load gen CPU | load avg |")
print("|---:" + ("|:---" if with_modes else "") + "|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    cpu = fmt(r.get("daemon_cpu_pct"), ".1f", " %")
    if r.get("daemon_kept_up") is False:
        cpu += " (fell behind: a floor)"
    note = "" if r.get("ok") else f" — FAILED: {r.get('error')}"
    mode = f"| {label(mode_of(r))} " if with_modes else ""
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
# Per TLS mode (progress or not): round closed (ms), daemon CPU (% of one core), RSS (MiB) at 10k.
TARGETS = {False: (1000, 25, 200), True: (2000, 35, 300)}
modes = sorted({mode_of(r) for r in rows})
for tls in sorted({tls for tls, _ in modes}):
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
for mode in modes:
    runs = [r for r in rows if r["nodes"] == 10000 and r.get("ok") and mode_of(r) == mode]
    name = " " + label(mode) if with_modes else ""
    if not runs:
        verdicts.append(f"{label(mode) or 'plain'}: not run")
        continue
    close_ms, cpu, hwm = medians(runs)
    if len(runs) > 1:
        print(f"10k{name}, median of {len(runs)} runs: "
              f"round closed {close_ms:.0f} ms, daemon CPU {cpu:.1f} %, VmHWM {hwm:.1f} MiB")
    close_target, cpu_target, rss_target = TARGETS[mode[0]]
    mode_missed = [what for what, over in (("round close", close_ms > close_target),
                                           ("heart-beat CPU", cpu > cpu_target),
                                           ("RSS", hwm > rss_target)) if over]
    missed += [what + name for what in mode_missed]
    verdicts.append(f"{label(mode) or 'plain'}: " + ("MISSED: " + ", ".join(mode_missed)
                                                    if mode_missed else "met"))

def ratio_table(title, pairs):
    """Per N, each metric's median over the `a` runs against the `b` runs.
    pairs: [(N, extra label, a runs, b runs)]."""
    print()
    print(f"| nodes | round closed, {title} | daemon CPU, {title} | VmHWM, {title} |")
    print("|---:|---:|---:|---:|")
    for n, extra, a_runs, b_runs in pairs:
        if not a_runs or not b_runs:
            print(f"| {n}{extra} | n/a | n/a | n/a |")
            continue
        a, b = medians(a_runs), medians(b_runs)
        print(f"| {n}{extra} | {a[0]:.0f} / {b[0]:.0f} ms = {a[0] / b[0]:.2f}× "
              f"| {a[1]:.1f} / {b[1]:.1f} % = {a[1] / b[1]:.2f}× "
              f"| {a[2]:.1f} / {b[2]:.1f} MiB = {a[2] / b[2]:.2f}× |")
    print()

def runs_of(n, tls, progress):
    return [r for r in rows if r["nodes"] == n and r.get("ok") and mode_of(r) == (tls, progress)]

nodes = sorted({r["nodes"] for r in rows})
if sys.argv[2] == "both":
    # Each metric's median over the mutual-TLS runs against the plain ones, per N.
    for progress in sorted({p for _, p in modes}):
        extra = f" ({label((False, progress)).split(', ')[-1]})" if with_progress else ""
        print()
        print("| nodes | TLS handshake, median agent |")
        print("|---:|---:|")
        for n in nodes:
            tls = runs_of(n, True, progress)
            handshake = median([(r.get("phase_ms") or {}).get("tls_handshake") or 0
                                for r in tls]) if tls else None
            print(f"| {n}{extra} | {fmt(handshake, '.0f', ' ms')} |")
        ratio_table("TLS / plain",
                    [(n, extra, runs_of(n, True, progress), runs_of(n, False, progress))
                     for n in nodes])
if sys.argv[3] == "both":
    # Each metric's median with progress in the heartbeats against without, per N.
    for tls in sorted({t for t, _ in modes}):
        extra = f" ({MODE[tls]})" if with_tls else ""
        ratio_table("with progress / without",
                    [(n, extra, runs_of(n, tls, True), runs_of(n, tls, False)) for n in nodes])

if with_modes:
    print("10k targets: " + "; ".join(verdicts))
else:
    print("10k targets: " + ("MISSED: " + ", ".join(missed) if missed else
                             "met" if verdicts and verdicts[0].endswith("met") else "not run"))
sys.exit(1 if failed or missed else 0)
EOF

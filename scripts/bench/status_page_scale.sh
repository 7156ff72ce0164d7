#!/usr/bin/env bash
# Status page benchmark: what musterd's status page (--metrics-port: `/`,
# which polls /status.json once a second, and /metrics) costs with N nodes
# heart-beating in one run (rdzv_load, as in rdzv_scale.sh: --nnodes N:N over
# loopback, a heartbeat every 0.5 s per agent). A fresh daemon per run.
# Each repeat measures, in this order:
#   1. fetches: once the round has closed (muster_nodes at /metrics reads N)
#      and 5 s have passed, --fetches sequential fetches each of /status.json
#      (the first page, the default limit of 100 rows: what the page asks
#      for), /status.json?limit=1000 (the largest page) and /metrics, while
#      the agents heart-beat; curl's time_total and size_download per fetch;
#   2. the daemon's CPU (utime+stime, % of one core) over rdzv_load's
#      --steady-seconds window with 0, 1 and 10 pollers (--pollers), each
#      fetching /status.json?limit=100 once a second as an open page does
#      (setInterval; pollers start 0.1 s apart), from the daemon's start on.
#      The order of these runs reverses with every repeat, so which of
#      0 and 1 poller goes first alternates.
# Printed: one row per run, then the medians over the repeats: fetch time and
# size per URL, daemon CPU per poller count with its ratio to none, and the
# extra daemon CPU per poll (ms) against the poll's own time_total; and,
# first, what one request costs per phase in process (status_page_cost.cc:
# the snapshot, the page's order, the JSON), without the network or the
# event loop, at the same N.
#
# The pollers are curl processes on the same machine (their cost is not the
# daemon's, but it shares the cores); the 1-minute load average is printed
# with each row; a run's poll count and poll time cover the whole run (the
# join included), its CPU the steady window only. Default settings (10,000
# nodes, 3 repeats) take about 2.5 minutes on a 2-core machine.
#
# Usage: scripts/bench/status_page_scale.sh [--build-dir DIR] [--nodes N] [--repeat K]
#                                           [--steady-seconds S] [--fetches F]
#                                           [--pollers "1 10"] [--json FILE]
# Exits 1 when a run failed (an agent refused or dropped, a fetch not
# answered 200, the round not closed in time). There are no targets.
# Builds musterd, rdzv_load and status_page_cost (scripts/bench/CMakeLists.txt, MUSTER_BUILD_BENCHMARKS=ON).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="$ROOT/build-bench"
NODES=10000
REPEAT=3
STEADY=10
FETCHES=20
POLLERS="1 10"
JSON_OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --steady-seconds) STEADY=$2; shift 2 ;;
    --fetches) FETCHES=$2; shift 2 ;;
    --pollers) POLLERS=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "status_page_scale.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for value in "$NODES" "$REPEAT" "$FETCHES" $POLLERS; do
  if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
    echo "status_page_scale.sh: '$value' must be a positive integer" >&2
    exit 2
  fi
done

# shellcheck source=scripts/bench/musterd_bench.sh
source "$ROOT/scripts/bench/musterd_bench.sh"
musterd_bench_build musterd rdzv_load status_page_cost
musterd_bench_raise_nofile "$NODES"

WORK=$(mktemp -d)
# The per-phase breakdown, in process, before any daemon runs.
"$BUILD/bin/status_page_cost" --nodes "$NODES" >"$WORK/cost.json"
POLLER_PIDS=()
stop_pollers() {
  local pid
  for pid in ${POLLER_PIDS[@]+"${POLLER_PIDS[@]}"}; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  POLLER_PIDS=()
}
LOAD_PID=""
stop_load() {
  [[ -n "$LOAD_PID" ]] || return 0
  kill -TERM "$LOAD_PID" 2>/dev/null || true
  wait "$LOAD_PID" 2>/dev/null || true
  LOAD_PID=""
}
trap 'stop_pollers; stop_load; musterd_bench_stop; rm -rf "$WORK"' EXIT
: > "$WORK/runs"  # one line per run: kind repeat pollers file...

# One fetch of URL, appended to OUT as "http_code time_total size_download".
fetch() {
  curl -s -o /dev/null -w '%{http_code} %{time_total} %{size_download}\n' "$1" >>"$2" ||
    echo "000 0 0" >>"$2"
}

# Fetches URL once a second (a tick starts every second, as setInterval does)
# until killed.
poll_loop() {
  local tick
  while :; do
    sleep 1 &
    tick=$!
    fetch "$1" "$2"
    wait "$tick"
  done
}

metrics_value() {  # NAME: its value at /metrics, or nothing
  curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | sed -n "s/^$1 \\([0-9.e+]*\\)\$/\\1/p"
}

# Run k's fetches: N agents heart-beat while the URLs are fetched one after another.
run_fetches() {
  local k=$1
  local out="$WORK/fetch.$k"
  musterd_bench_start "musterd.fetch.$k" --metrics-port 0
  "$BUILD/bin/rdzv_load" --host 127.0.0.1 --port "$DAEMON_PORT" --nodes "$NODES" \
    --steady-seconds 3600 --musterd-pid "$DAEMON_PID" >"$out.load" &
  LOAD_PID=$!
  local closed=""
  for _ in $(seq 600); do
    kill -0 "$LOAD_PID" 2>/dev/null || break
    [[ "$(metrics_value muster_nodes)" == "$NODES" ]] && { closed=1; break; }
    sleep 0.5
  done
  if [[ -z "$closed" ]]; then
    echo "fetch $k FAILED: the round did not close: $(tail -n 1 "$out.load")" >>"$WORK/runs"
    stop_load
    musterd_bench_stop
    return
  fi
  sleep 5  # past the round's backlog, into steady heart-beating
  local base="http://127.0.0.1:$METRICS_PORT" what url
  for what in status.json "status.json?limit=1000" metrics; do
    url="$base/$what"
    for _ in $(seq "$FETCHES"); do fetch "$url" "$out.$what"; done
  done
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  stop_load
  musterd_bench_stop
  echo "fetch $k $load $out" >>"$WORK/runs"
}

# Run k with P pollers: rdzv_load's steady window measures the daemon's CPU.
run_pollers() {
  local k=$1 p=$2
  local out="$WORK/pollers.$k.$p"
  musterd_bench_start "musterd.pollers.$k.$p" --metrics-port 0
  : >"$out.polls"
  for _ in $(seq "$p"); do
    poll_loop "http://127.0.0.1:$METRICS_PORT/status.json?limit=100" "$out.polls" &
    POLLER_PIDS+=($!)
    sleep 0.1
  done
  "$BUILD/bin/rdzv_load" --host 127.0.0.1 --port "$DAEMON_PORT" --nodes "$NODES" \
    --steady-seconds "$STEADY" --musterd-pid "$DAEMON_PID" >"$out.load" || true
  stop_pollers
  musterd_bench_stop
  echo "pollers $k $p $out" >>"$WORK/runs"
}

for k in $(seq "$REPEAT"); do
  run_fetches "$k"
  read -ra order <<<"0 $POLLERS"
  if (( k % 2 == 0 )); then
    read -ra order <<<"$(printf '%s\n' "${order[@]}" | tac | tr '\n' ' ')"
  fi
  for p in "${order[@]}"; do run_pollers "$k" "$p"; done
done

/usr/bin/python3 - "$WORK/runs" "$NODES" "$STEADY" "$JSON_OUT" "$WORK/cost.json" <<'EOF'
import json, os, statistics, sys

runs_file, nodes, steady, json_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
cost = json.load(open(sys.argv[5]))
URLS = ["status.json", "status.json?limit=1000", "metrics"]

def median(values):
    return statistics.median(values) if values else None

def fmt(value, spec, suffix=""):
    return "n/a" if value is None else format(value, spec) + suffix

def fetches(path):
    """[(code, ms, bytes)] from a file of 'code seconds bytes' lines."""
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        code, seconds, size = line.split()
        out.append((int(code), float(seconds) * 1000, int(size)))
    return out

failed = []
fetch_rows, poll_rows = [], []
for line in open(runs_file):
    kind, k, rest = line.split(" ", 2)
    if rest.startswith("FAILED"):
        failed.append(f"{kind} run {k}: {rest.strip()}")
        continue
    if kind == "fetch":
        load, base = rest.split()
        row = {"repeat": int(k), "loadavg_1m": float(load)}
        for url in URLS:
            got = fetches(f"{base}.{url}")
            bad = [c for c, _, _ in got if c != 200]
            if bad or not got:
                failed.append(f"fetch run {k}: /{url} answered {bad[:3] or 'nothing'}")
            row[url] = {"ms": median([ms for _, ms, _ in got]),
                        "max_ms": max([ms for _, ms, _ in got], default=None),
                        "bytes": median([b for _, _, b in got])}
        fetch_rows.append(row)
    else:
        p, base = rest.split()
        lines = [l for l in open(f"{base}.load") if l.strip()]
        result = json.loads(lines[-1]) if lines else {"ok": False, "error": "no output"}
        polls = fetches(f"{base}.polls")
        bad = [c for c, _, _ in polls if c != 200]
        if not result.get("ok"):
            failed.append(f"run {k} with {p} pollers: {result.get('error')}")
        if bad:
            failed.append(f"run {k} with {p} pollers: {len(bad)} polls not answered 200")
        result.update(repeat=int(k), pollers=int(p), polls=len(polls),
                      poll_ms=median([ms for _, ms, _ in polls]),
                      poll_bytes=median([b for _, _, b in polls]))
        poll_rows.append(result)

print(f"In process at {nodes} nodes, median of {cost['repeat']} (status_page_cost): "
      f"snapshot {cost['snapshot']:.2f} ms, rows by interest {cost['rows_by_interest']:.2f} ms, "
      f"page JSON {cost['page_json']:.2f} ms (limit 1000: {cost['page_json_1000']:.2f} ms), "
      f"run metrics {cost['run_metrics']:.2f} ms; a poll (snapshot + page JSON) "
      f"{cost['status_json']:.2f} ms")
print()
print(f"Fetches at {nodes} nodes, median (max) of each run's fetches:")
print("| run | /status.json (limit 100) | /status.json?limit=1000 | /metrics | load avg |")
print("|---:|---:|---:|---:|---:|")
for r in fetch_rows:
    cells = [f"{fmt(r[u]['ms'], '.1f')} ({fmt(r[u]['max_ms'], '.1f')}) ms, "
             f"{fmt(r[u]['bytes'], '.0f')} B" for u in URLS]
    print(f"| {r['repeat']} | " + " | ".join(cells) + f" | {r['loadavg_1m']:.1f} |")
print()
print(f"Daemon CPU at {nodes} nodes over the {steady} s steady window:")
print("| run | pollers | daemon CPU (% of one core) | of which kernel | polls | poll time "
      "| poll size | VmHWM | load gen CPU | load avg |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in poll_rows:
    cpu = fmt(r.get("daemon_cpu_pct"), ".1f", " %")
    if r.get("daemon_kept_up") is False:
        cpu += " (fell behind)"
    note = "" if r.get("ok") else f" — FAILED: {r.get('error')}"
    print(f"| {r['repeat']}{note} | {r['pollers']} | {cpu} "
          f"| {fmt(r.get('daemon_cpu_sys_pct'), '.1f', ' %')} | {r['polls']} "
          f"| {fmt(r['poll_ms'], '.1f', ' ms')} | {fmt(r['poll_bytes'], '.0f', ' B')} "
          f"| {fmt(r.get('daemon_vmhwm_mib'), '.1f', ' MiB')} "
          f"| {fmt(r.get('loadgen_cpu_pct'), '.1f', ' %')} | {fmt(r.get('loadavg_1m'), '.1f')} |")
print()
print(f"Summary at {nodes} nodes, medians over {len(fetch_rows)} fetch runs:")
for u in URLS:
    ms = median([r[u]["ms"] for r in fetch_rows if r[u]["ms"] is not None])
    size = median([r[u]["bytes"] for r in fetch_rows if r[u]["bytes"] is not None])
    print(f"  /{u}: {fmt(ms, '.1f', ' ms')}, {fmt(size, '.0f', ' B')}")
cpu = {}
for p in sorted({r["pollers"] for r in poll_rows}):
    ok = [r for r in poll_rows if r["pollers"] == p and r.get("ok") and r.get("daemon_cpu_pct")]
    cpu[p] = median([r["daemon_cpu_pct"] for r in ok])
    poll_ms = median([r["poll_ms"] for r in ok if r["poll_ms"] is not None])
    line = f"  {p} pollers: daemon CPU {fmt(cpu[p], '.1f', ' %')} (median of {len(ok)})"
    if p and cpu[p] is not None and cpu.get(0):
        # One poll a second per poller: each % of one core is 10 ms of CPU a second.
        per_poll = (cpu[p] - cpu[0]) * 10 / p
        line += (f", {cpu[p] / cpu[0]:.2f}× none; {per_poll:.1f} ms of daemon CPU per poll"
                 f" against a poll time of {fmt(poll_ms, '.1f', ' ms')}")
    print(line)
if json_out:
    with open(json_out, "w") as f:
        json.dump({"nodes": nodes, "in_process_ms": cost, "fetches": fetch_rows,
                   "runs": poll_rows}, f, indent=1)
for why in failed:
    print("FAILED: " + why)
sys.exit(1 if failed else 0)
EOF

"""Launch under SLURM: srun start -> all 6 workers started, muster vs torchrun.

Driven by scripts/bench/slurm_launch.sh, which brings up the private cluster
(tests/fixtures/slurm_cluster.sh) and passes its directory as --cluster. Every run is
one `srun -N3` on that cluster (3 virtual nodes x 2 workers):

  muster            srun -N3 --ntasks-per-node=1 muster --nproc-per-node 2
                    --no-python WORKER (everything else derived from SLURM)
  torchrun static   srun -N3 --ntasks-per-node=1 sh -c 'torchrun --nnodes 3
                    --nproc_per_node 2 --node_rank $SLURM_NODEID --master_addr n1
                    --master_port P --no_python WORKER' (P: a free port per run)
  torchrun c10d     the same with --rdzv_backend c10d --rdzv_endpoint n1:P
                    --rdzv_id ID --rdzv_conf is_host=1 on node 0, 0 elsewhere
  bare srun         srun -N3 --ntasks-per-node=2 WORKER (no launcher: the floor)

torchrun is Debian's torch 1.13 through torchrun_compat.py, with
--monitor_interval 0.1 (modern torchrun's default; the same as muster's).

The WORKER is a tiny bash script: it appends `$EPOCHREALTIME RANK WORLD_SIZE
SLURM_NODEID` to a per-run file and exits 0 (the bare-srun floor records
SLURM_PROCID / SLURM_NTASKS instead). Each run goes through a bash driver run
inside the cluster's mount namespace (`cluster.sh exec`) that takes
$EPOCHREALTIME just before it forks srun (time 0) and again when srun has
exited; both clocks are CLOCK_REALTIME on this one host. Measured per run:
time 0 -> the last worker's timestamp, and time 0 -> srun exited (wall).

A run fails when srun exits non-zero or times out, or the workers' file does
not hold ranks 0..5 exactly once each, all with WORLD_SIZE 6, two per SLURM
node. One warm-up run per launcher (checked, not timed) comes first, then
--rounds rounds, each running every launcher once in a fixed order.

Before the rounds, unless --no-c10d-probe, torchrun's c10d rendezvous is
tried once WITHOUT is_host (--rdzv_endpoint n1:P alone, read_timeout=10 to
fail in 10 s rather than 60): the virtual nodes share one hostname and n1 is
neither it nor a loopback IP literal, so no agent decides to host the store.
Its outcome is printed below the table and never fails the script.

Exit status: 0, or 1 when any timed or warm-up run failed.
"""
import argparse
import contextlib
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib.ports import free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CLUSTER_SH = os.path.join(ROOT, "scripts", "slurm", "cluster.sh")
NNODES, NPROC = 3, 2
WORLD = NNODES * NPROC

WORKER = r"""#!/bin/bash
# slurm_launch worker: OUT [slurm]. Appends "start_time rank world_size node".
LC_ALL=C
if [[ ${2-} == slurm ]]; then r=${SLURM_PROCID-unset} w=${SLURM_NTASKS-unset}
else r=${RANK-unset} w=${WORLD_SIZE-unset}; fi
echo "$EPOCHREALTIME $r $w ${SLURM_NODEID-unset}" >>"$1"
"""

DRIVER = r"""#!/bin/bash
# slurm_launch driver: TIMES SRUN_ARGS... Run inside the cluster's namespace.
LC_ALL=C
times=$1
shift
t0=$EPOCHREALTIME
srun "$@"
rc=$?
t1=$EPOCHREALTIME
echo "$t0 $t1 $rc" >"$times"
"""

LABELS = {
    "muster": "muster (agent per node, all from SLURM)",
    "torchrun-static": "torchrun static (--node_rank $SLURM_NODEID --master_addr n1)",
    "torchrun-c10d": "torchrun c10d (--rdzv_endpoint n1:P, is_host=1 on node 0)",
    "bare": "bare srun --ntasks-per-node=2 (no launcher, floor)",
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def torchrun_cmd(args, extra, worker, out):
    """srun arguments for torchrun under `sh -c`, so $SLURM_NODEID expands per task."""
    torchrun = [args.python, os.path.join(HERE, "torchrun_compat.py"), "--nnodes", str(NNODES),
                "--nproc_per_node", str(NPROC)]
    tail = ["--monitor_interval", "0.1", "--no_python", worker, out]
    script = "exec " + " ".join(shlex.quote(a) for a in torchrun) + " " + extra + " " + \
        " ".join(shlex.quote(a) for a in tail)
    return ["-N3", "--ntasks-per-node=1", "sh", "-c", script]


def srun_args(name, args, worker, out, tag):
    if name == "muster":
        return ["-N3", "--ntasks-per-node=1", args.muster, "--nproc-per-node", str(NPROC),
                "--no-python", worker, out]
    if name == "torchrun-static":
        return torchrun_cmd(args, f'--node_rank "$SLURM_NODEID" --master_addr n1 '
                                  f'--master_port {free_port()}', worker, out)
    if name == "torchrun-c10d":
        return torchrun_cmd(args, f'--rdzv_backend c10d --rdzv_endpoint n1:{free_port()} '
                                  f'--rdzv_id slurm-launch-{tag} '
                                  f'--rdzv_conf "is_host=$([ "$SLURM_NODEID" = 0 ] && echo 1 || echo 0)"',
                            worker, out)
    if name == "c10d-probe":
        return torchrun_cmd(args, f'--rdzv_backend c10d --rdzv_endpoint n1:{free_port()} '
                                  f'--rdzv_id slurm-launch-{tag} --rdzv_conf read_timeout=10',
                            worker, out)
    if name == "bare":
        return [f"-N{NNODES}", f"--ntasks-per-node={NPROC}", worker, out, "slurm"]
    raise ValueError(name)


def run_once(name, args, tag):
    """One srun. Returns (result dict or None, failure reason or None, log path)."""
    base = os.path.join(args.work, f"{tag}-{name}")
    out, times, log_path = base + ".workers", base + ".times", base + ".log"
    cmd = [CLUSTER_SH, "exec", args.cluster, "/bin/bash", args.driver, times] + \
        srun_args(name, args, args.worker, out, tag)
    with open(log_path, "w") as log_file:
        log_file.write("# " + shlex.join(cmd) + "\n")
        log_file.flush()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                                start_new_session=True)
        try:
            proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            # SIGTERM makes srun cancel the step; then everything left, by group.
            # The group may be gone by the time either signal is sent.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return None, f"timed out after {args.timeout:.0f} s", log_path
    try:
        with open(times) as f:
            t0, t1, rc = f.read().split()
        t0, t1, rc = float(t0), float(t1), int(rc)
    except (OSError, ValueError):
        return None, f"no srun times (cluster.sh exec exited {proc.returncode})", log_path
    records = []
    try:
        with open(out) as f:
            for line in f:
                parts = line.split()
                records.append((float(parts[0]), parts[1], parts[2], parts[3]))
    except OSError:
        pass
    except (ValueError, IndexError):
        return None, f"unreadable worker line {line!r}", log_path
    problems = []
    if rc != 0:
        problems.append(f"srun exited {rc}")
    ranks = sorted(r[1] for r in records)
    if not records:
        problems.append(f"none of the {WORLD} workers started")
    elif ranks != [str(i) for i in range(WORLD)]:
        problems.append(f"ranks {ranks}, expected 0..{WORLD - 1} once each")
    sizes = sorted({r[2] for r in records})
    if records and sizes != [str(WORLD)]:
        problems.append(f"WORLD_SIZE {sizes}")
    per_node = sorted(r[3] for r in records)
    if records and per_node != sorted([str(n) for n in range(NNODES)] * NPROC):
        problems.append(f"SLURM_NODEID of the workers {per_node}, expected {NPROC} per node")
    result = {"rc": rc, "wall": t1 - t0,
              "last": max(r[0] for r in records) - t0 if records else None,
              "workers": len(records)}
    return result, "; ".join(problems) or None, log_path


def tail(path, n=12):
    with open(path, errors="replace") as f:
        lines = [l.rstrip() for l in f if l.strip() and "OMP_NUM_THREADS" not in l
                 and not l.startswith("*****") and l.strip() != "WARNING:torch.distributed.run:"]
    return "\n".join("    " + l for l in lines[-n:])


def fmt(seconds):
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms" if seconds >= 0.1 else f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"


def probe_c10d(args):
    """torchrun c10d without is_host; returns one line on what happened."""
    start = time.monotonic()
    result, problem, log_path = run_once("c10d-probe", args, "probe")
    took = time.monotonic() - start
    if problem is None:
        return (f"torchrun c10d with `--rdzv_endpoint n1:P` and no is_host: worked here "
                f"(last worker {fmt(result['last'])} after srun start)")
    with open(log_path, errors="replace") as f:
        text = f.read()
    errors = re.findall(r"^(\w*(?:Error|Exception)\b.*)$", text, re.M)
    hosts = sorted(set(re.findall(r"srun: error: (n\d): task \d+: (.*)", text)))
    why = errors[0] if errors else problem
    what = (f"srun exited {result['rc']}, {result['workers']} workers started" if result
            else problem)
    return (f"torchrun c10d with plain `--rdzv_endpoint n1:P` (no is_host, read_timeout=10): "
            f"FAILED after {took:.1f} s ({what}); the agents: \"{why}\" "
            f"({', '.join(f'{h}: {m}' for h, m in hosts) or 'no srun task errors'}). "
            f"The c10d row passes is_host explicitly (1 on SLURM node 0).")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", required=True, help="directory of a running cluster.sh cluster")
    parser.add_argument("--work", required=True, help="directory for scripts, worker files, logs")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--muster", default=os.path.join(ROOT, "build", "bin", "muster"))
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--timeout", type=float, default=120.0, help="per srun (default 120 s)")
    parser.add_argument("--pause", type=float, default=0.3, help="seconds between runs")
    parser.add_argument("--no-c10d", action="store_true", help="leave out the torchrun c10d row")
    parser.add_argument("--no-c10d-probe", action="store_true",
                        help="skip the one c10d run without is_host")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    args.muster = os.path.abspath(args.muster)
    if not os.access(args.muster, os.X_OK):
        sys.exit(f"slurm_launch: no muster binary at {args.muster} (pass --muster PATH)")

    os.makedirs(args.work, exist_ok=True)
    args.worker = os.path.join(args.work, "worker.sh")
    args.driver = os.path.join(args.work, "driver.sh")
    for path, text in ((args.worker, WORKER), (args.driver, DRIVER)):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
    os.chdir(args.work)

    names = ["muster", "torchrun-static"] + ([] if args.no_c10d else ["torchrun-c10d"]) + ["bare"]
    samples = {name: [] for name in names}
    failures = []

    def one(name, tag, timed):
        result, problem, log_path = run_once(name, args, tag)
        if problem is not None:
            failures.append((name, tag, problem, log_path))
            log(f"slurm_launch: {tag} {name}: FAILED: {problem} (log {log_path})\n{tail(log_path)}")
        else:
            log(f"slurm_launch: {tag} {name}: last worker {fmt(result['last'])}, "
                f"srun wall {fmt(result['wall'])}")
            if timed:
                samples[name].append(result)
        time.sleep(args.pause)

    probe_line = None
    if not args.no_c10d_probe:
        log("slurm_launch: probing torchrun c10d without is_host (fails in ~10 s if it cannot work)")
        probe_line = probe_c10d(args)
        log("slurm_launch: " + probe_line)
    for name in names:
        one(name, "warmup", timed=False)
    for i in range(args.rounds):
        for name in names:  # alternate, so drift hits every launcher alike
            one(name, f"round{i + 1}", timed=True)

    def med(name, key):
        vals = [s[key] for s in samples[name]]
        return statistics.median(vals) if vals else None

    m_last, m_wall = med("muster", "last"), med("muster", "wall")
    print(f"srun -N{NNODES} on the private SLURM 22.05 cluster (virtual nodes n1..n3 on one host), "
          f"{NNODES} nodes x {NPROC} workers, {args.rounds} alternated rounds, medians")
    print("time 0: just before the driver forks srun, inside the cluster's namespace; a worker's "
          "start: $EPOCHREALTIME in the bash worker; torchrun: torch 1.13 (torchrun_compat.py), "
          "--monitor_interval 0.1; ratio: start-time median / muster's (srun wall ratio in brackets)")
    print()
    print("| launcher | srun → last worker started (median / min–max) | srun wall (median) "
          "| ratio vs muster |")
    print("|---|---|---|---|")
    for name in names:
        s = samples[name]
        if not s:
            print(f"| {LABELS[name]} | all runs failed | - | - |")
            continue
        lasts = [x["last"] for x in s]
        last, wall = med(name, "last"), med(name, "wall")
        n = f" ({len(s)} of {args.rounds} runs)" if len(s) != args.rounds else ""
        ratio = (f"{last / m_last:.1f}x (wall {wall / m_wall:.1f}x)"
                 if m_last and m_wall else "-")
        print(f"| {LABELS[name]} | {fmt(last)} / {fmt(min(lasts))}–{fmt(max(lasts))}{n} "
              f"| {fmt(wall)} | {ratio} |")
    print()
    if probe_line:
        print(probe_line)
        print()
    if failures:
        print(f"{len(failures)} run(s) FAILED:")
        for name, tag, problem, log_path in failures:
            print(f"  {tag} {name}: {problem} (log {log_path})")
    else:
        runs = (args.rounds + 1) * len(names)
        print(f"all {runs} runs (warm-up included) ok: srun exit 0, ranks 0..{WORLD - 1} once each, "
              f"WORLD_SIZE {WORLD}, {NPROC} workers per SLURM node")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

"""In-place recovery of a PyTorch DDP script (muster package) vs muster --recovery restart and torchrun.

usage: torch_in_place.py [worker-kill|agent-kill|node-join|overhead|all] [--runs N] [options]
       (--scenario NAME is the same as the positional name; default: all)

The workers run examples/torch/ddp_in_place.py (muster.InPlace; gloo on
loopback) with --ckpt FILE --ckpt-every 10 (rank 0 saves, every start
resumes from the file: that is how a restart recovers; in place, only a
replacement reads it, and then takes a peer's state) and --sleep (0.05 s)
after each step: the same command line in every column.
Each rank appends `STEP <rank> <step> <pid> <unix time>` after every step;
every time below comes from those lines and this script's time.time() at
the kill (one clock, the chroot's included).

Columns (muster's workers run torch --torch, 2.14 by default: Debian sid's
python3 through tests/torch/chroot_python.sh as muster's --python, in the
chroot --torch-chroot, root only; 1.13 is /usr/bin/python3; every muster gets
MUSTER_LOG_LEVEL=info and PYTHONPATH=python/):
  in-place       muster as it comes (--recovery auto: in place, warm workers)
  in-place-1.13  the same with torch 1.13 workers (only with --torch 2.14)
  restart        muster --recovery restart: every worker restarts, from the checkpoint
  restart-cold   the same with --no-warm-workers
  torchrun       torchrun of torch --torch with the same script (the module is off under
                 torchrun and the script resumes from the checkpoint); 2.14 through
                 torch_recovery.py's wrapper (TCPStore without libuv) and with
                 TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (see torch_recovery.py), both with
                 --monitor_interval 0.1. A torchrun that does not recover within --window s
                 is reported as such, never as a failure of this script.

Scenarios:
  worker-kill  --nproc (3) workers, one node, --standalone --max-restarts 3. Once every
               rank logged step >= --kill-after-step (12) and the checkpoint exists,
               rank 1's worker (its pid from the STEP log) is SIGKILLed. Columns:
               in-place, in-place-1.13, restart, restart-cold, torchrun.
               Targets (in-place): stepping again p50 <= 0.3 s, <= 1 step redone and
               both survivors' pids kept in every run.
  agent-kill   3 agents x 2 workers on this machine, elastic (--nnodes 2:3 --rdzv-backend
               c10d --rdzv-endpoint 127.0.0.1:PORT --rdzv-conf
               last_call_timeout=--last-call-timeout --max-restarts 3, muster with
               --local-addr 127.0.0.1); agent 0 starts first and serves the rendezvous
               (--musterd: a musterd serves muster's). Once every rank logged step >=
               --kill-after-step, an agent that does not serve the rendezvous (and
               preferably does not hold rank 0) is SIGKILLed with its workers, a node
               lost (--kill agent: the agent alone; muster's workers die with it,
               torchrun's outlive it and go on stepping). Columns: in-place, torchrun.
               Target (in-place): the 4 surviving ranks stepping in the world of 4,
               p50 <= 0.6 s.
  node-join    2 agents x 2 workers (as agent-kill, muster only); once every rank logged
               step >= --kill-after-step a third agent starts. Measured from the
               joiner's round closing (its event=generation line on its stderr, stamped
               as it arrives through a pipe) to the joiner's 2 ranks stepping, and to all
               6 stepping. Checked: each joiner rank logs "joined at step S with rank X's
               state" and the 4 running workers keep their pids. Target: joiner stepping
               p50 <= 0.5 s.
  overhead     fault-free, --nproc workers, --standalone, --overhead-steps (300) steps,
               --sleep 0: the example (module) vs scripts/bench/ddp_plain.py (the same
               model, data, loss and step line over plain DDP, no module), both under the
               same muster. Measured: the median of every per-step interval from step 20
               on (pooled over ranks), per run; overhead = module / plain - 1 of the
               medians over runs. Target: <= 2 %.

Per run:
  stepping again   the kill (node-join: the joiner's generation line) -> every rank of
                   the new generation logged a step in it: the latest of their first
                   steps there. A step belongs to the new generation when a process
                   first seen after the kill logged it, or a survivor did past the step
                   the in-place recovery agreed on (the survivors' "recovered in place at
                   step S" lines).
  steps redone     the furthest step any process of the old generation completed (before
                   or just after the kill), minus the first step the new generation
                   logged, plus one, floored at 0: 0 when nothing was lost.
  pids kept        survivors (ranks not killed; node-join: the 4 running ones) whose pid
                   logged steps in the new generation.
In-place phase breakdown (medians over runs; per run the slowest survivor's line):
  pause  muster's event=in_place_recovered paused_ms (the failure noticed -> the join
         sent: every survivor paused, the replacement started); leave / wait / form
         (group, state, ddp) from the survivors' "recovered in place ... in X s [...]";
         muster total_ms (event=in_place_recovered); join: the replacement's or the
         joiner's group+state+ddp ("joined at step ...").

Runs alternate the columns, the order reversed every other run, --settle s apart.
Every process is started in a session of its own; after each run (and on
SIGTERM/SIGINT/SIGHUP) the launchers' process trees, every worker seen in the
STEP log (pid and start time checked) and the process groups are SIGKILLed
(torch_recovery_runs.Run.kill_all); temp dirs are removed unless a run failed (then
kept and named) or --keep.

Exit status: 0; 1 when a muster run failed or a target was MISSED (torchrun's
results never fail the script); 2 on a usage error; 130 when interrupted.
"""
import os
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import torch_recovery_runs  # noqa: E402
from bench_procs import alive, exit_with, free_port, interrupt_on_signals, sigkill
from bench_scenarios import (RunError, Scenario, add_keep_and_bin_dir_args, add_wait_args, find_binaries,
                             finish, fmt, print_targets, run_alternated, scenario_parser)
from in_place_logs import RecoveryLog, StepLog
from torch_in_place_report import report_faults, report_overhead, targets
from torch_recovery_agent_kill import agents_to_kill, elastic_flags, wait_port
from torch_recovery_runs import base_env, descendants, torchrun_cmd
from testlib.torch_refs import CHROOT_PYTHON, DEFAULT_CHROOT, PYTHON, ROOT, chroot_unavailable_reason

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(ROOT, "examples", "torch", "ddp_in_place.py")
PLAIN = os.path.join(HERE, "ddp_plain.py")
PACKAGE = os.path.join(ROOT, "python")
SCENARIOS = ("worker-kill", "agent-kill", "node-join", "overhead")
AGENTS, AGENT_NPROC = torch_recovery_runs.AGENTS, torch_recovery_runs.AGENT_NPROC
# The bench's PYTHONPATH (the package) shows in the printed command lines too.
torch_recovery_runs.SHOWN_ENV = torch_recovery_runs.SHOWN_ENV + ("PYTHONPATH",)
OVERHEAD_SKIP = 20  # the steps before this one are warm-up
# An agent's line on entering a generation: its ranks and the world size.
GENERATION = re.compile(r"event=generation gen=\d+ group_rank=\d+ group_world_size=\d+ "
                        r"ranks=(\d+)\.\.(\d+) world_size=(\d+)")


class Run(torch_recovery_runs.Run):
    """torch_recovery_runs.Run (processes, cleanup, temp dir) over a STEP log."""

    def __init__(self, workroot, name):
        super().__init__(workroot, name)
        self.log_path = os.path.join(self.dir, "steps.log")
        self.traces = StepLog(self.log_path)
        self.script = [EXAMPLE]
        self._recovery = RecoveryLog()

    def script_args(self, args):
        return self.script

    def recovery(self):
        """The recovery lines of every launcher's stderr so far (read incrementally)."""
        return self._recovery.poll([p.err_path for p in self.procs])

    def shown_commands(self):
        """The command lines run, each once."""
        return list(dict.fromkeys(self.commands))


def labels(args):
    t = args.torch
    return {"in-place": f"muster in place (torch {t})", "in-place-1.13": "muster in place (torch 1.13)",
            "restart": f"muster restart + ckpt, warm (torch {t})",
            "restart-cold": f"muster restart + ckpt, cold (torch {t})",
            "torchrun": f"torchrun {t} + ckpt" + ("" if t == "1.13" or args.torchrun_shared_store
                                                 else " (unshared store)"),
            "module": f"muster, example with the module (torch {t})",
            "plain": f"muster, plain DDP copy (torch {t})"}


def kill_script(args, run):
    """The example's command line for the fault scenarios."""
    return [EXAMPLE, "--steps", "1000000", "--log", run.log_path, "--ckpt", run.ckpt,
            "--ckpt-every", str(args.ckpt_every), "--sleep", str(args.sleep)]


def muster_cmd(args, column, flags, run):
    cmd = [args.muster] + flags
    if column in ("restart", "restart-cold"):
        cmd += ["--recovery", "restart"]
    if column == "restart-cold":
        cmd += ["--no-warm-workers"]
    env = base_env({"MUSTER_LOG_LEVEL": "info", "PYTHONPATH": PACKAGE})
    if column != "in-place-1.13" and args.torch == "2.14":
        cmd += ["--python", CHROOT_PYTHON]
        env["MUSTER_TORCH_CHROOT"] = args.torch_chroot
    return cmd + run.script_args(args), env


def launcher_cmd(args, column, muster_flags, torchrun_flags, run):
    if column == "torchrun":
        cmd, env = torchrun_cmd(args, args.torch, torchrun_flags, run)
        env["PYTHONPATH"] = PACKAGE  # the example imports muster (off under torchrun)
        return cmd, env
    return muster_cmd(args, column, muster_flags, run)


# ---------------------------------------------------------------------------
# Scenarios: each returns a result dict ("total", ...) or raises RunError

def after_fault(args, column, run, t0, world, survivors, watch, what, victim=None):
    """Waits for the new generation of `world` ranks begun after `t0`; the result of a run.
    `survivors`: the pids that should step in it (those not killed)."""
    steps = run.traces
    in_place = column in ("in-place", "in-place-1.13")
    with open(os.path.join(run.dir, "fault.txt"), "w") as f:  # for a look at a kept run
        f.write(f"t0 {t0:.6f} world {world} survivors {' '.join(map(str, survivors))}\n")

    def group():
        return steps.new_generation(t0, world, run.recovery().agreed() if in_place else None)

    muster = column != "torchrun"
    try:
        first = run.wait(what, group, args.timeout if muster else args.window, watch)
    except RunError as exc:
        last = steps.latest()
        where = ", ".join(f"rank {r}: step {s.step} pid {s.pid} at +{s.t - t0:.2f} s"
                          for r, s in sorted(last.items()))
        if muster:
            raise RunError(f"{exc} (last steps: {where})") from None
        exited = [(p.name, p.returncode) for p in watch if p.poll() is not None]
        old = [pid for pid, t in steps.first_seen.items() if t <= t0]
        stepping = {s.rank for s in last.values() if s.pid in old and s.t > t0 + args.window / 2}
        return {"none": f"did not recover within {args.window:.0f} s"
                        + (f"; exited {exited}" if exited else "")
                        + f"; {sum(alive(pid) for pid in old)} of the {len(old)} old processes alive"
                        + (f", ranks {sorted(stepping)} of the old generation still stepping"
                           if stepping else "") + f"; last steps: {where}"}
    lines = run.recovery()
    agreed = lines.agreed() if in_place else None
    redone, resumed = steps.redone(first, t0, agreed)
    new_pids = {s.pid for s in steps.lines if steps.is_new(s, t0, agreed)}
    res = {"total": max(s.t for s in first.values()) - t0, "redone": redone, "resumed": resumed,
           "kept": (len(set(survivors) & new_pids), len(survivors)),
           "fallbacks": lines.fallbacks, "joins": lines.joins}
    if in_place:
        res.update(in_place_phases(lines))
        # One event=in_place_recovered per agent whose workers recovered (a joiner's have not).
        agents = sum(1 for p in run.procs
                     if p.name.startswith(("launcher", "agent")) and p is not victim)
        if res["recoveries"] != agents:
            res["problem"] = (f"{res['recoveries']} event=in_place_recovered lines, not one per "
                              f"surviving agent ({agents})")
    return res


def in_place_phases(lines):
    """The phases of one in-place recovery (seconds): the slowest survivor's line, the
    slowest agent's event, the slowest replacement/joiner."""
    res = {}
    if lines.recovered:
        slow = max(lines.recovered, key=lambda r: r["total"])
        res.update({k: slow[k] for k in ("leave", "wait", "group", "state", "ddp") if k in slow})
        res["survivor"] = slow["total"]
    if lines.events:
        res["pause"] = max(p for p, _ in lines.events)
        res["muster"] = max(t for _, t in lines.events)
    if lines.joined:
        res["join"] = max(sum(j.get(k, 0) for k in ("group", "state", "ddp")) for j in lines.joined)
    res["recoveries"] = len(lines.events)
    return res


def worker_kill(args, column, run):
    n = args.nproc
    run.script = kill_script(args, run)
    cmd, env = launcher_cmd(args, column,
                            ["--standalone", "--nproc-per-node", str(n), "--max-restarts", "3"],
                            ["--standalone", "--nproc_per_node", str(n), "--max_restarts", "3",
                             "--monitor_interval", "0.1"], run)
    launcher = run.spawn(cmd, env, "launcher")
    steps = run.traces
    run.wait(f"every rank at step {args.kill_after_step} and a checkpoint",
             lambda: steps.all_at(n, args.kill_after_step) and os.path.exists(run.ckpt),
             args.timeout, [launcher])
    before = steps.latest()
    killed_at = time.time()
    os.kill(before[1].pid, signal.SIGKILL)
    survivors = [s.pid for r, s in before.items() if r != 1]
    return after_fault(args, column, run, killed_at, n, survivors, [launcher],
                       "every rank stepping in the new generation")


def start_agents(args, column, run, count, port, rid, watch):
    """`count` agents of the elastic job; agent 0 first, serving the rendezvous, unless a
    musterd (in `watch`) does."""
    agents = []
    for i in range(count):
        muster = column != "torchrun"
        flags = elastic_flags(muster, f"127.0.0.1:{port}", rid, args.last_call_timeout)
        cmd, env = launcher_cmd(args, column, flags, flags, run)
        agents.append(run.spawn(cmd, env, f"agent{i}"))
        if i == 0 and not watch:
            wait_port(port, args.timeout, agents[0])
    return agents


def serve_rendezvous(args, column, run):
    """(port, [the musterd, when --musterd serves muster's rendezvous])."""
    port = free_port()
    if column != "torchrun" and args.musterd:
        daemon = run.spawn([args.musterd_bin, "--host", "127.0.0.1", "--port", str(port)],
                           base_env({"MUSTER_LOG_LEVEL": "info"}), "musterd")
        wait_port(port, 10, daemon)
        return port, [daemon]
    return port, []


def agent_kill(args, column, run):
    run.script = kill_script(args, run)
    port, watch = serve_rendezvous(args, column, run)
    agents = start_agents(args, column, run, AGENTS, port, f"bench{os.getpid()}", watch)
    world = AGENTS * AGENT_NPROC
    steps = run.traces
    run.wait(f"every rank at step {args.kill_after_step}",
             lambda: steps.all_at(world, args.kill_after_step), args.timeout, watch + agents)
    before = steps.latest()
    candidates, hosts, workers_of = agents_to_kill(agents, port, run.traces.workers.values())
    victim = agents[candidates[0]]
    doomed = [victim.pid] + (descendants([victim.pid]) if args.kill == "node" else [])
    victim_pids = {w.pid for w in workers_of[candidates[0]]}
    survivors = [s.pid for s in before.values() if s.pid not in victim_pids]
    killed_at = time.time()
    sigkill(doomed)
    world_after = world - AGENT_NPROC
    res = after_fault(args, column, run, killed_at, world_after, survivors,
                      [p for p in watch + agents if p is not victim],
                      f"the {world_after} surviving ranks stepping in the new generation", victim)
    ranks = sorted(s.rank for s in before.values() if s.pid in victim_pids)
    host = ", ".join(f"agent{h}" for h in hosts) or ("musterd" if watch else "not found")
    res["victim"] = f"agent{candidates[0]} (ranks {ranks}; rendezvous: {host})"
    return res


def node_join(args, column, run):
    run.script = kill_script(args, run)
    port, watch = serve_rendezvous(args, column, run)
    rid = f"bench{os.getpid()}"
    agents = start_agents(args, column, run, AGENTS - 1, port, rid, watch)
    world = (AGENTS - 1) * AGENT_NPROC
    steps = run.traces
    run.wait(f"every rank at step {args.kill_after_step}",
             lambda: steps.all_at(world, args.kill_after_step), args.timeout, watch + agents)
    running = [s.pid for s in steps.latest().values()]
    started_at = time.time()
    cmd, env = muster_cmd(args, column, elastic_flags(True, f"127.0.0.1:{port}", rid,
                                                      args.last_call_timeout), run)
    joiner = run.spawn(cmd, env, "joiner", stamped=True)
    every = watch + agents + [joiner]

    def generation():
        for t, line in list(joiner.stamped):
            m = GENERATION.search(line)
            if m:
                return t, int(m.group(1)), int(m.group(2)), int(m.group(3))
        return None

    t_gen, low, high, world_now = run.wait("the joiner's generation", generation, args.timeout, every)
    if world_now != AGENTS * AGENT_NPROC:
        raise RunError(f"the joiner's generation has world size {world_now}")
    res = after_fault(args, column, run, started_at, world_now, running, every,
                      f"the {world_now} ranks stepping with the joiner")
    first = steps.new_generation(started_at, world_now, run.recovery().agreed())
    res["all"] = res["total"] - (t_gen - started_at)
    res["total"] = max(first[r].t for r in range(low, high + 1)) - t_gen
    res["gen_after_start"] = t_gen - started_at
    ready = [t for t, line in joiner.stamped if "event=warm_ready" in line]
    res["warm_ready_before_gen"] = (t_gen - ready[0]) if ready else None
    # The running workers' stall: each one's last step before the join -> its first after.
    agreed, stalls = run.recovery().agreed(), []
    for pid in running:
        mine = [s for s in steps.lines if s.pid == pid]
        new = [i for i, s in enumerate(mine) if steps.is_new(s, started_at, agreed)]
        if new and new[0] > 0:
            stalls.append(mine[new[0]].t - mine[new[0] - 1].t)
    res["stall"] = max(stalls) if stalls else None
    joined = {j["rank"]: j for j in run.recovery().joined}
    missing = [r for r in range(low, high + 1) if r not in joined]
    res["joined"] = "; ".join(f"rank {r} with rank {j['source']}'s state (world size {j['world']})"
                              for r, j in sorted(joined.items()))
    if missing:
        res["problem"] = "; ".join(filter(None, [
            res.get("problem"), f"no 'joined at step' line from joiner rank(s) {missing}"]))
    return res


def overhead(args, column, run):
    run.script = [EXAMPLE if column == "module" else PLAIN, "--steps", str(args.overhead_steps),
                  "--log", run.log_path, "--sleep", "0"]
    cmd, env = muster_cmd(args, column, ["--standalone", "--nproc-per-node", str(args.nproc)], run)
    launcher = run.spawn(cmd, env, "launcher")
    try:
        rc = launcher.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        raise RunError(f"did not finish {args.overhead_steps} steps within {args.timeout:.0f} s")
    run.traces.poll()
    if rc != 0:
        raise RunError(f"muster exited with {rc}: {torch_recovery_runs.tail(launcher.err_path, 6)}")
    gaps, means = run.traces.intervals(OVERHEAD_SKIP)
    if not gaps:
        raise RunError("no step intervals in the log")
    return {"total": statistics.median(gaps), "mean": statistics.median(means)}


# ---------------------------------------------------------------------------

def parse_args():
    parser = scenario_parser(__doc__, SCENARIOS)
    parser.add_argument("--torch", choices=("2.14", "1.13"), default="2.14",
                        help="torch of muster's workers and of the torchrun column (default 2.14)")
    parser.add_argument("--columns", default=None,
                        help="columns to run, comma-separated, of in-place, in-place-1.13, restart, "
                             "restart-cold, torchrun (fault scenarios), module, plain (overhead); "
                             "default: each scenario's")
    parser.add_argument("--nproc", type=int, default=3, help="worker-kill, overhead: workers (default 3)")
    parser.add_argument("--sleep", type=float, default=0.05,
                        help="the example's --sleep per step in the fault scenarios (default 0.05 s)")
    parser.add_argument("--kill-after-step", type=int, default=12,
                        help="fault once every rank logged this step (default 12)")
    parser.add_argument("--ckpt-every", type=int, default=10, help="the example's --ckpt-every (default 10)")
    parser.add_argument("--overhead-steps", type=int, default=300,
                        help="overhead: steps per run (default 300)")
    add_wait_args(parser, "a muster run")
    parser.add_argument("--last-call-timeout", default="1",
                        help="elastic: --rdzv-conf last_call_timeout for every launcher, whole seconds "
                             "as torchrun requires (default 1)")
    parser.add_argument("--kill", choices=("agent", "node"), default="node",
                        help="agent-kill: SIGKILL the agent and its workers at once, a node lost "
                             "(default), or the agent process only (muster's workers die with it, "
                             "torchrun's outlive it)")
    parser.add_argument("--musterd", action="store_true",
                        help="agent-kill, node-join: muster's rendezvous in a standalone musterd")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="pause between runs, for the machine to quiet down (default 1 s)")
    parser.add_argument("--torch-chroot", default=os.environ.get("MUSTER_TORCH_CHROOT", DEFAULT_CHROOT),
                        help=f"the torch 2.14 chroot (default $MUSTER_TORCH_CHROOT or {DEFAULT_CHROOT})")
    parser.add_argument("--torchrun-shared-store", action="store_true",
                        help="torchrun 2.14 without TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (see "
                             "torch_recovery.py)")
    add_keep_and_bin_dir_args(parser)
    args = parser.parse_args()
    args.scenario = args.scenario_opt or args.scenario or "all"
    if args.runs < 1 or args.nproc < 2:
        parser.error("--runs >= 1, --nproc >= 2 (rank 1 is killed)")
    args.torch_chroot = os.path.abspath(args.torch_chroot)
    return parser, args


def plan_of(parser, args):
    scenarios = SCENARIOS if args.scenario == "all" else (args.scenario,)
    defaults = {"worker-kill": ["in-place", "in-place-1.13", "restart", "restart-cold", "torchrun"],
                "agent-kill": ["in-place", "torchrun"], "node-join": ["in-place"],
                "overhead": ["module", "plain"]}
    wanted = None if args.columns is None else [c.strip() for c in args.columns.split(",") if c.strip()]
    known = set(c for cols in defaults.values() for c in cols)
    for c in wanted or []:
        if c not in known:
            parser.error(f"--columns: unknown column '{c}' (known: {', '.join(sorted(known))})")
    skipped = {}
    if args.torch == "2.14" and (reason := chroot_unavailable_reason(args.torch_chroot)):
        skipped["torch 2.14"] = reason
    fns = {"worker-kill": worker_kill, "agent-kill": agent_kill, "node-join": node_join,
           "overhead": overhead}
    titles = {
        "worker-kill": f"worker-kill: {args.nproc} workers, one node; SIGKILL of rank 1 at step >= "
                       f"{args.kill_after_step} -> every rank stepping again",
        "agent-kill": f"agent-kill: {AGENTS} agents x {AGENT_NPROC} workers (--nnodes 2:{AGENTS}, c10d); "
                      f"SIGKILL of a non-serving agent{' and its workers' if args.kill == 'node' else ''} "
                      f"at step >= {args.kill_after_step} -> the {(AGENTS - 1) * AGENT_NPROC} surviving "
                      "ranks stepping in the new generation",
        "node-join": f"node-join: {AGENTS - 1} agents x {AGENT_NPROC} workers, a third agent starts at step "
                     f">= {args.kill_after_step}; its generation line -> its {AGENT_NPROC} ranks stepping",
        "overhead": f"overhead: {args.nproc} workers, {args.overhead_steps} steps, --sleep 0, fault-free; "
                    f"per-step interval from step {OVERHEAD_SKIP} on",
    }
    plan = []
    for key in scenarios:
        cols = [c for c in defaults[key] if wanted is None or c in wanted]
        if args.torch == "1.13":
            cols = [c for c in cols if c != "in-place-1.13"]
        if skipped:
            cols = [c for c in cols if c == "in-place-1.13"]
        if cols:
            plan.append(Scenario(key, titles[key], cols, fns[key]))
    return plan, skipped


def describe(sc, res):
    """A run's progress line: its total, steps redone and survivors' pids kept."""
    return (f"{fmt(res['total'], 'ms' if sc.key == 'overhead' else 's')}"
            + (f", {res['redone']} redone, pids kept {res['kept'][0]}/{res['kept'][1]}"
               if "redone" in res else ""))


def main():
    parser, args = parse_args()
    if not find_binaries(args, args.musterd):
        return 2
    if not os.access(PYTHON, os.X_OK):
        print(f"error: {PYTHON} (Debian's python3 with torch 1.13) not found", file=sys.stderr)
        return 2
    plan, skipped = plan_of(parser, args)
    label = labels(args)
    for what, reason in skipped.items():
        print(f"{what} not measured: {reason}")
    interrupt_on_signals()
    kept, workroot = run_alternated(args, plan, Run, label, describe, "muster-torch-in-place-")
    problems = []
    for sc in plan:
        if sc.key == "overhead":
            p50, found = report_overhead(sc, label, args.runs)
            ok = {}
        else:
            p50, ok, found = report_faults(sc, label, args.runs)
        problems += found + print_targets(sc, targets(sc, p50, ok))
    return finish(kept, workroot, problems)


if __name__ == "__main__":
    exit_with(main)

"""The chaos suite: a real elastic muster-train job under a seeded schedule of faults.

usage: chaos.py [--seed S] [--duration T] [--hosts N] [--replicas R] [--loopback]
                [--png PATH] [--out-dir DIR] [--faults KIND,...] [--nproc P]
                [--step-sleep-ms MS] [--checkpoint-every K]
                [--recovery restart|in-place|auto] [--trainer muster-train|torch]

One musterd and one muster agent per host run `muster-train` (Gloo, a small MLP)
with --nnodes MIN:N (MIN = max(1, N-1)), --max-restarts 1000,
--hang-timeout and --recovery (default restart; in-place: survivors pause and
rejoin, their generation records come from the agents' in_place_rejoin lines). As root the hosts are network namespaces on a bridge
(tests/fixtures/netns_hosts.sh); otherwise, or with --loopback, every agent runs on
127.0.0.1 and the faults that need namespaces or root are skipped with the
reason printed. With --replicas R (R >= 2) the rendezvous is replicated
(chaos_replicas.py): one etcd member and R musterd replicas electing a leader,
each replica in a host namespace of its own as root (loopback: distinct
ports), and every agent is given all of them in --rdzv-endpoint. Each worker
starts through chaos_worker.py, which records its generation, rank, pid and
start, and which workers of earlier generations were still alive, then execs
muster-train.

Faults are drawn with random.Random(seed): the schedule is a sequence of seeded
permutations of the available kinds, so every kind comes up once per round.
One fault at a time until --duration seconds of the job have passed:
  worker_kill   SIGKILL a worker            worker_hang  SIGSTOP a worker (hang-timeout)
  agent_kill    SIGKILL a non-master agent  master_kill  SIGKILL the group-rank-0 agent
  daemon_kill   SIGKILL musterd, restart it on the same port
  link_down     a host's bridge port down   partition    nftables drops host <-> daemon
  ckpt_kill     SIGKILL rank 0 when a checkpoint temp file appears (mid-save)
  disk_full     fill the tmpfs holding the checkpoint directory, then free it
  flood         garbage, oversized frames and 10k connections at musterd
  leader_kill   SIGKILL the leading replica, restart it on its address (a standby)
  leader_cut    the leading replica's host link down (its bridge port), then up
leader_kill and leader_cut need --replicas 2 or more (leader_cut namespaces too).
With replicas, daemon_kill SIGKILLs a standby (and restarts it), partition drops
a host's traffic to every replica, and flood aims at the leader.
After each fault the driver waits for recovery (a new generation complete and
stepping; for daemon_kill and flood: the daemon knows every node again and the
job steps), checks the invariants, undoes the fault (a replacement agent, the
daemon restarted, link up, nft rule removed, space freed; for the replica
faults: the replica back and naming the new leader) and waits until every
host is back in a stepping generation. For leader_kill and leader_cut,
recovery is every agent on the new leader (`event=rdzv_leader`) and the job
stepping after that.

The job's length is left open during the fault window (chaos_worker.py takes
--steps from a file); at its end the driver fixes it at the furthest step plus two
checkpoint intervals and SIGKILLs one worker so that the next generation picks it
up (the "wind-down"), so the job ends a few seconds after --duration whatever the
faults cost. The fault-free reference (one host, the same flags but no step sleep)
then runs exactly that many steps.

With --trainer torch (chaos_torch.py) the workers are a real PyTorch DDP script,
examples/torch/ddp_in_place.py with the muster Python package (torch 1.13, the
host's /usr/bin/python3), forked from each node's warm process through
chaos_torch_worker.py, under --recovery in-place unless --recovery says
otherwise: survivors keep their process and a process started into a
generation takes its state from a peer. Its command line is the script's
own (--steps N --log FILE --sleep S): a survivor keeps the --steps it started
with, so the job's length is fixed before it starts (from --duration and
--step-sleep-ms, default 100 here, at most 1000 steps: chaos_torch.plan_steps)
instead of at a wind-down, and the fault window also ends when fewer steps
are left than a fault needs. Steps are read from the script's step log (rank
0's lines), ckpt_kill and disk_full are skipped (no checkpoint), and the
final weights must equal those of a fault-free run of the same number of
steps (one host running all HOSTS x NPROC workers) within 1e-5 absolute: a
new world size or DDP bucket layout after a recovery sums in another order.
As root each agent's GLOO_SOCKET_IFNAME names its namespace's interface
(the hostname resolves to loopback), and a job that has not stepped for 6 s
has every worker print its Python stacks into its agent's log (SIGUSR1).
The report also says how many workers were kept in place: for each
recovery (a fault, and the undoing that brings a host back), the workers of
the generation before it that the fault did not take, and how many of them
are the same process in the generation after.

Invariants, after every fault and at the end (chaos_checks.py): ranks contiguous
0..W-1 per generation; exactly one master (group rank 0) per generation; never
two generations' workers alive at once; world size within [MIN, MAX] x nproc;
every final checkpoint whole and the newest not older than the furthest step
minus one interval; agents and the daemon never exit on their own; a running
agent nobody cut off is never declared silent by the daemon (when one is, its
stack is taken with gdb and saved in OUT_DIR); the job
recovers within a bound; a full disk fails the save with a clear error and
checkpoints resume once space is freed; the final weights equal a fault-free
one-host run's within 1e-5 relative; every process, namespace and mount is gone
at the end (checked by PID and `ip netns list`). With replicas, also: never
two replicas serving at once, and after leader_kill, leader_cut and a
standby's daemon_kill (no membership changed) no worker restarted: no new
generation and every worker of the one before still running, checked once the
new leader has rebuilt the run and failover_timeout has passed.

Prints a table per fault kind (count, detection p50/p99: fault -> first agent
log line reacting; recovery p50/p99: fault -> workers of the next generation
stepping; steps redone: progress lines for steps already done before), writes a
PNG timeline (--png, default OUT_DIR/timeline.png) and prints its legend. Exits
0 when every invariant held, 1 otherwise (the message names the invariant and
the evidence); artefacts are kept in OUT_DIR, printed at the end.

The driver, one concern per file: chaos.py (the run's state, the fault loop, the
wind-down), chaos_setup.py (hosts, daemon or replicas, agents, the reference run),
chaos_observe.py (log lines and worker records), chaos_invariants.py (checked after
each fault), chaos_faults.py, chaos_replica_faults.py and chaos_storage_faults.py (the
fault kinds), chaos_report.py (tables, timeline, teardown), chaos_common.py (what they
share); chaos_cluster.py (processes, namespaces, the reaper) and chaos_checks.py (the
invariants' checks) below them.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_checks  # noqa: E402
import chaos_cluster as cluster  # noqa: E402
import chaos_replicas  # noqa: E402
import chaos_torch  # noqa: E402
from chaos_checks import InvariantError  # noqa: E402
from chaos_common import (AUTO_HANG_EXTRA_S, HANG_TIMEOUT, MUSTER, MUSTERD,  # noqa: E402
                          OPEN_ENDED_STEPS, TRAIN, WRAPPER)
from chaos_faults import Faults  # noqa: E402
from chaos_invariants import Invariants  # noqa: E402
from chaos_observe import Observer  # noqa: E402
from chaos_replica_faults import ReplicaFaults  # noqa: E402
from chaos_report import Report, report, teardown  # noqa: E402
from chaos_setup import Setup  # noqa: E402
from chaos_storage_faults import StorageFaults  # noqa: E402


class Chaos(Setup, Observer, Invariants, Faults, ReplicaFaults, StorageFaults, Report):
    """One chaos run: its state (set here) and its loop (the schedule of faults, the
    wind-down, the final checks); the parts it is made of each own one concern."""

    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.root = os.geteuid() == 0
        self.out_dir = args.out_dir or tempfile.mkdtemp(prefix="muster-chaos-")
        os.makedirs(self.out_dir, exist_ok=True)
        self.log_dir = os.path.join(self.out_dir, "logs")
        self.records = os.path.join(self.out_dir, "records")
        os.makedirs(self.log_dir, exist_ok=True)
        os.makedirs(self.records, exist_ok=True)
        self.registry = cluster.Registry(os.path.join(self.out_dir, "registry"))
        self.registry.add("records", self.records)
        self.reaper = cluster.start_reaper(self.registry.path)
        self.log = cluster.Log(self.log_dir)
        self.n = args.hosts
        self.nproc = args.nproc
        self.min_nodes = max(1, self.n - 1)
        self.max_nodes = self.n
        self.full_world = self.n * self.nproc
        self.interval = args.checkpoint_every
        self.skipped = {}  # kind -> reason
        self.failures = []  # InvariantError
        self.faults = []
        self.daemon = None
        self.daemons = []
        self.port = None
        self.replicas = None  # chaos_replicas.Replicas with --replicas >= 2
        self.agents = {}  # host -> Proc (the current agent of that host)
        self.all_agents = []
        self.incarnation = {}
        self.expected_dead = set()  # pids we killed on purpose
        self.ckpt_mount = None
        self.filler = None
        self.t0 = None
        self._parsed = 0
        self.steps = []  # (t, step)
        self.resumes = []  # (t, step)
        self.agent_lines = []  # (t, source, text): the agents' own stderr lines
        self.gen_events = []  # (t, source, gen, group_rank, world)
        self.job_done = False
        self.silent_deaths = []  # (t, agent pid, daemon line, daemon): node_dead why=silent
        self.agent_err = []  # (t, source, text): every stderr line of every agent
        self.diagnosed = set()
        self.notes = []
        # --trainer torch: the script's step log, and for every recovery
        # (what, workers kept, survivors) (chaos_torch.survivors_kept).
        self.torch = args.trainer == "torch"
        self.step_log = None
        self.last_step = {}  # pid -> the highest step it logged
        self.stall_dumped = None  # the last step's time when the workers last dumped stacks
        self.kept = []

    def schedule(self):
        while True:
            round_ = list(self.kinds)
            self.rng.shuffle(round_)
            yield from round_

    def run(self):
        self.choose_mode()
        self.prepare_checkpoint_dir()
        self.final_out = os.path.join(self.out_dir, "final.bin")
        if self.torch:
            # Fixed now: a survivor recovered in place keeps the --steps it started with.
            self.step_log = chaos_torch.StepLog(os.path.join(self.out_dir, "steps.log"))
            self.steps_total, self.step_sleep_s, self.step_s = chaos_torch.plan_steps(
                self.args.duration, self.args.step_sleep_ms / 1000.0)
            # The fault window ends early when fewer steps are left than a fault
            # and its undoing take.
            self.margin_steps = int(chaos_torch.TAIL_S / self.step_s)
            self.set_steps(self.steps_total)
            self.say(f"seed {self.args.seed}, torch trainer ({os.path.basename(chaos_torch.EXAMPLE)}"
                     f", --recovery {self.args.recovery}), {self.n} hosts x {self.nproc} workers, "
                     f"--nnodes {self.min_nodes}:{self.max_nodes}, --steps {self.steps_total} "
                     f"--sleep {self.step_sleep_s:.3f} (about {self.step_s * 1000:.0f} ms a step), "
                     f"{self.args.duration:.0f}s of "
                     f"faults: {', '.join(self.kinds) or 'none'}")
        else:
            # The job's length is fixed only when the fault window is over (wind_down);
            # until then the workers run towards a step they never reach.
            self.steps_total = OPEN_ENDED_STEPS
            self.set_steps(OPEN_ENDED_STEPS)
            self.say(f"seed {self.args.seed}, {self.n} hosts x {self.nproc} workers, --nnodes "
                     f"{self.min_nodes}:{self.max_nodes}, checkpoint every {self.interval} steps, "
                     f"{self.args.duration:.0f}s of faults: {', '.join(self.kinds) or 'none'}")
        self.t0 = time.time()
        if self.args.replicas > 1:
            self.start_replicas()
        else:
            self.start_daemon()
        for i in range(1, self.n + 1):
            self.start_agent(i)
        gen, t = self.wait_steady("start-up", timeout=60)
        self.say(f"job up: generation {gen} with {self.full_world} workers stepping "
                 f"({t - self.t0:.2f}s after start)")
        kinds = self.schedule()
        while (not self.job_done and time.time() - self.t0 < self.args.duration
               and self.steps_left() > getattr(self, "margin_steps", 0)):
            kind = next(kinds)
            fault = self.inject(kind)
            self.say(f"  {kind}: detected {self.fmt(fault.detected, fault.t)}, recovered "
                     f"{self.fmt(fault.recovered, fault.t)}"
                     + (f", restored at +{fault.restored - fault.t:.2f}s" if fault.restored else "")
                     + "".join(f"; {n}" for n in fault.notes))
        self.window_end_t = time.time()
        self.say(f"fault window over ({len(self.faults)} faults)"
                 + (f" at step {self.furthest_step()} of {self.steps_total}" if self.torch else ""))
        if self.torch:
            self.wind_down_t = None  # the job's length was fixed from the start
        else:
            self.wind_down()
        self.finish()

    def steps_left(self):
        return self.steps_total - self.furthest_step()

    def fmt(self, t, t0):
        return f"+{t - t0:.3f}s" if t and t0 else "-"

    def set_steps(self, steps):
        tmp = os.path.join(self.records, ".steps.tmp")
        with open(tmp, "w") as f:
            f.write(str(steps))
        os.rename(tmp, os.path.join(self.records, "steps"))

    def wind_down(self):
        """Fixes the job's length a little past where it is, and restarts the workers once
        (SIGKILL of the last rank, from a steady state, so every worker of the next
        generation reads the same --steps) so that the job ends in a few seconds."""
        self.wait_steady("before the wind-down")
        self.steps_total = self.furthest_step() + 2 * self.interval
        self.set_steps(self.steps_total)
        gen, ranks = self.current()
        rec = ranks[max(ranks)]
        self.wind_down_t = time.time()
        cluster.kill_pid(rec["pid"], rec["ticks"])
        self.say(f"wind-down: --steps {self.steps_total} from the next generation on; SIGKILL "
                 f"gen {gen} rank {rec['rank']} (pid {rec['pid']}) to start it")

    def finish(self):
        agents = list(self.agents.values())
        if self.torch:
            # The steps left at the estimated rate, twice over, and a recovery's worth.
            timeout = 60 + 2 * self.steps_left() * self.step_s
            since, began = "the fault window", self.window_end_t
        else:
            timeout = 60 + 2 * self.interval * (self.args.step_sleep_ms + 100) / 1000.0
            since, began = "the wind-down", self.wind_down_t
        ended = self.wait(lambda: all(not a.alive() for a in agents), timeout, interval=0.1)
        if not ended:
            raise InvariantError("the job finishes",
                                 f"agents still running {timeout:.0f}s after {since}, at "
                                 f"step {self.furthest_step()} of {self.steps_total}\n"
                                 + self.agent_tails())
        self.parse()
        self.t_end = time.time()
        codes = {a.name: a.popen.poll() for a in agents}
        if any(c != 0 for c in codes.values()):
            raise InvariantError("the job finishes", f"agent exit codes {codes}\n"
                                 + self.agent_tails())
        gen, ranks = self.current()
        if self.torch:
            self.check_every_rank_finished(gen, ranks)
        else:
            steps_of_last = {r["steps"] for r in ranks.values()}
            if steps_of_last != {str(self.steps_total)}:
                raise InvariantError("the chaos driver runs",
                                     f"the last generation {gen} ran with --steps "
                                     f"{steps_of_last}, not {self.steps_total}")
        self.say(f"job finished at step {self.furthest_step()} "
                 f"({self.t_end - began:.1f}s after {since}); agents exited "
                 f"{sorted(set(codes.values()))}")
        self.check_invariants("the end")
        for proc in self.rendezvous_procs():
            if not proc.alive():
                self.violation(InvariantError("agents and the daemon stay up",
                                              f"{proc.name} exited {proc.popen.poll()}"), "the end")
        if self.torch:
            self.compare_torch_weights()
            return
        reference = self.run_reference()
        if not os.path.exists(self.final_out):
            raise InvariantError("the final weights equal the fault-free run's",
                                 f"{self.final_out} was not written")
        diff = chaos_checks.max_relative_difference(reference,
                                                    chaos_checks.read_floats(self.final_out))
        self.say(f"final weights vs the fault-free run: max relative difference {diff:.2e}")
        if diff > 1e-5:
            self.violation(InvariantError("the final weights equal the fault-free run's",
                                          f"max relative difference {diff:.3e} > 1e-5 "
                                          f"({self.final_out} vs reference.bin)"), "the end")

    def check_every_rank_finished(self, gen, ranks):
        """--trainer torch: every worker started with --steps steps_total, and every
        worker of the last generation logged the last step."""
        started = {r["steps"] for g in self.gens().values() for r in g.values()
                   if r["steps"] is not None}
        if started != {str(self.steps_total)}:
            raise InvariantError("the chaos driver runs",
                                 f"workers ran with --steps {sorted(started)}, not "
                                 f"{self.steps_total}")
        short = [f"rank {rank} pid {rec['pid']} at {self.last_step.get(rec['pid'], 0)}"
                 for rank, rec in sorted(ranks.items())
                 if self.last_step.get(rec["pid"], 0) != self.steps_total]
        if short:
            raise InvariantError("every rank does every step",
                                 f"the last generation {gen}: {', '.join(short)} of "
                                 f"{self.steps_total} steps in {self.step_log.path}")

    def compare_torch_weights(self):
        """--trainer torch: rank 0's final weights against a fault-free run of as many
        steps, within chaos_torch.TOLERANCE (absolute)."""
        reference, seconds = chaos_torch.run_reference(
            MUSTER, self.out_dir, self.full_world, self.steps_total, self.log, self.registry,
            self.env(**chaos_torch.env_vars()))
        self.say(f"fault-free reference: {self.steps_total} steps on one host "
                 f"({self.full_world} workers, no sleep) in {seconds:.1f}s")
        final = self.step_log.path + ".weights"
        if not os.path.exists(final):
            raise InvariantError("the final weights equal the fault-free run's",
                                 f"{final} was not written")
        diff = chaos_torch.max_abs_difference(reference, chaos_torch.read_weights(final))
        self.say(f"final weights vs the fault-free run: max absolute difference {diff:.2e} "
                 f"({len(reference)} weights, tolerance {chaos_torch.TOLERANCE:g})")
        if diff > chaos_torch.TOLERANCE:
            self.violation(InvariantError("the final weights equal the fault-free run's",
                                          f"max absolute difference {diff:.3e} > "
                                          f"{chaos_torch.TOLERANCE:g} ({final} vs "
                                          f"reference.log.weights)"), "the end")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=120.0,
                        help="seconds of the job during which faults are injected")
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--nproc", type=int, default=2, help="workers per host")
    parser.add_argument("--replicas", type=int, default=1,
                        help="musterd replicas (1: one musterd; 2 or more: a replicated "
                             "rendezvous on one etcd member, needed by leader_kill and "
                             "leader_cut)")
    parser.add_argument("--loopback", action="store_true",
                        help="run every agent on 127.0.0.1 even as root")
    parser.add_argument("--png", help="timeline image (default OUT_DIR/timeline.png)")
    parser.add_argument("--out-dir", help="artefacts (default: a new temp dir)")
    parser.add_argument("--faults", help="comma-separated kinds to draw from (default: all)")
    parser.add_argument("--step-sleep-ms", type=int,
                        help="each step's sleep (default 25 with muster-train, 100 with torch)")
    parser.add_argument("--checkpoint-every", type=int, default=20)
    parser.add_argument("--hang-timeout", default=str(HANG_TIMEOUT),
                        help="muster's --hang-timeout: seconds, or auto (its default: a "
                             "worker_hang is found after 20 s at least, so its recovery bound "
                             f"grows by {AUTO_HANG_EXTRA_S:.0f} s)")
    parser.add_argument("--recovery", choices=("restart", "in-place", "auto"),
                        help="muster's --recovery: restart every worker after a fault, or "
                             "recover the survivors in place (default: restart with "
                             "muster-train, in-place with torch)")
    parser.add_argument("--trainer", choices=("muster-train", "torch"), default="muster-train",
                        help="the workers: muster-train, or a PyTorch DDP script recovering "
                             "in place (examples/torch/ddp_in_place.py, chaos_torch.py)")
    args = parser.parse_args()
    if args.recovery is None:
        args.recovery = "in-place" if args.trainer == "torch" else "restart"
    if args.step_sleep_ms is None:
        args.step_sleep_ms = 100 if args.trainer == "torch" else 25
    if not 2 <= args.hosts <= 8:
        # One host gives --nnodes 1:1, which muster runs without the daemon (a local
        # restart loop, not an elastic job): nothing here would be exercised.
        parser.error("--hosts must be 2..8 (an elastic job needs at least two nodes)")
    if not 1 <= args.replicas <= 5:
        parser.error(f"--replicas must be 1..5, not {args.replicas}")
    if args.replicas > 1 and not os.access(chaos_replicas.ETCD, os.X_OK):
        # ctest's SKIP_RETURN_CODE: reported as Skipped, with the reason.
        print(f"chaos: SKIP: --replicas {args.replicas} needs etcd at {chaos_replicas.ETCD} "
              "(scripts/install-deps.sh installs etcd-server)", flush=True)
        sys.exit(77)
    for path in (MUSTER, MUSTERD) + ((TRAIN,) if args.trainer == "muster-train" else ()):
        if not os.access(path, os.X_OK):
            sys.exit(f"chaos: {path} is not built (scripts/build.sh, or set MUSTER_BIN_DIR)")
    if args.trainer == "muster-train" and not os.access(WRAPPER, os.X_OK):
        sys.exit(f"chaos: {WRAPPER} is not executable (chmod +x)")
    if args.trainer == "torch":
        found = subprocess.run([chaos_torch.PYTHON, "-c", "import torch"], capture_output=True)
        if found.returncode != 0:
            print(f"chaos: SKIP: --trainer torch needs torch in {chaos_torch.PYTHON} "
                  "(apt-get install python3-torch)", flush=True)
            sys.exit(77)
    # Room for the flood's 10k connections (its process inherits the limit).
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    chaos = Chaos(args)
    failure = None
    leftovers = []
    try:
        try:
            chaos.run()
        except InvariantError as e:
            failure = e
        except Exception as e:  # noqa: BLE001 - reported as a failure of the suite itself
            failure = InvariantError("the chaos driver runs", f"{e!r}\n{traceback.format_exc()}")
        if failure is not None and chaos.t0:
            # What else the records show, before the processes go.
            chaos.check_invariants("after the failure")
    except BaseException as e:  # noqa: BLE001 - Ctrl-C, SIGTERM (exit 143): still tear down
        failure = failure or InvariantError("the chaos driver runs", f"interrupted: {e!r}")
    finally:
        leftovers = teardown(chaos)
    if leftovers:
        chaos.violation(InvariantError("every process and namespace is cleaned up",
                                       "; ".join(leftovers)), "the end")
    if failure is not None:
        chaos.violation(failure, "during the run")
    report(chaos)
    sys.exit(1 if chaos.failures else 0)


if __name__ == "__main__":
    main()

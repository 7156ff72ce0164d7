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
"""
import argparse
import ctypes
import errno
import json
import math
import os
import random
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_checks  # noqa: E402
import chaos_cluster as cluster  # noqa: E402
import chaos_png  # noqa: E402
import chaos_replicas  # noqa: E402
import chaos_torch  # noqa: E402
from chaos_checks import InvariantError  # noqa: E402

MUSTER = os.path.join(cluster.BIN_DIR, "muster")
MUSTERD = os.path.join(cluster.BIN_DIR, "musterd")
TRAIN = os.path.join(cluster.BIN_DIR, "muster-train")
WRAPPER = os.path.join(cluster.HERE, "chaos_worker.py")
FLOOD = os.path.join(cluster.HERE, "chaos_flood.py")
RUN_ID = "chaos"
OPEN_ENDED_STEPS = 1000000  # --steps until the wind-down fixes the real length
# Given to the daemon too: a run's round timing is the daemon's (the default
# last_call_timeout of 2 s would hold a replacement node back that long).
RDZV_CONF = "last_call_timeout=0.5"

ALL_KINDS = ["worker_kill", "worker_hang", "agent_kill", "master_kill", "daemon_kill",
             "link_down", "partition", "ckpt_kill", "disk_full", "flood", "leader_kill",
             "leader_cut"]
# The leader's own faults (--replicas 2+); after them, as after a standby's
# daemon_kill, no membership changed and no worker may restart.
REPLICA_KINDS = ("leader_kill", "leader_cut")

STEP_RE = re.compile(r"^\[rank0\]:\s*step=(\d+) ")
RESUMED_RE = re.compile(r"^\[rank0\]:\s*(?:resumed from|recovered in place at) step (\d+) ")
# --recovery in-place: a worker moved into a generation without starting again.
REJOIN_RE = re.compile(r"event=in_place_rejoin gen=(\d+) rank=(\d+) local_rank=\d+ "
                       r"world_size=(\d+) group_rank=(\d+) group_world_size=(\d+) "
                       r"master=(\S+) pid=(\d+)")
SILENT_RE = re.compile(r"event=node_dead node=[^:\s]+:(\d+):\S+ .*why=silent")
GEN_RE = re.compile(r"event=generation gen=(\d+) group_rank=(\d+) .*world_size=(\d+)")

HANG_TIMEOUT = 3.0
RECOVERY_TIMEOUT = 25.0
RESTORE_TIMEOUT = 30.0
# musterd's default failover_timeout (rendezvous/state/settings.h): a new leader
# rebuilds the run by then, and an agent left without one fences after it.
FAILOVER_TIMEOUT = 3.5


def percentile(values, q):
    """Nearest-rank percentile of a non-empty list."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))]


class Fault:
    def __init__(self, kind, target):
        self.kind = kind
        self.target = target  # words: which host/rank/pid
        self.host = None  # the host a link_down/partition cut off
        self.replica = None  # the replica process (its log name) a replica fault hit
        self.t = None  # injected (wall clock)
        self.detected = None
        self.detect_line = ""
        self.recovered = None
        self.restored = None
        self.notes = []
        self.redone = 0


class Inotify:
    """IN_CREATE/IN_MOVED_TO events of one directory (ctypes; no dependency)."""

    IN_CREATE, IN_MOVED_TO = 0x100, 0x80

    def __init__(self, path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if self.libc.inotify_add_watch(self.fd, path.encode(),
                                       self.IN_CREATE | self.IN_MOVED_TO) < 0:
            os.close(self.fd)
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")

    def names(self, timeout):
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        names, pos = [], 0
        while pos + 16 <= len(data):
            _, _, _, length = struct.unpack_from("iIII", data, pos)
            names.append(data[pos + 16:pos + 16 + length].rstrip(b"\0").decode(errors="replace"))
            pos += 16 + length
        return names

    def close(self):
        os.close(self.fd)


class Chaos:
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

    # ------------------------------------------------------------ set-up

    def say(self, text):
        stamp = f"{time.time() - self.t0:7.2f}s " if self.t0 else "         "
        print(f"chaos: {stamp}{text}", flush=True)

    def choose_mode(self):
        if self.args.loopback:
            self.say("loopback mode (--loopback): every agent on 127.0.0.1")
            self.hosts = cluster.LoopbackHosts(self.n)
        elif not self.root:
            self.say(f"not root (uid {os.geteuid()}): network namespaces need root, so every agent "
                     "runs on 127.0.0.1 (loopback fallback)")
            self.hosts = cluster.LoopbackHosts(self.n)
        else:
            removed = cluster.remove_stale_namespaces()
            if removed:
                self.say(f"removed namespaces of dead earlier runs: {removed}")
            # Replica j runs on host n + j (a link of its own for leader_cut).
            self.hosts = cluster.NetnsHosts(self.n + (self.args.replicas
                                                      if self.args.replicas > 1 else 0))
            self.hosts.up(self.registry)
            where = (f"etcd at {self.hosts.daemon_addr}, replicas on hosts "
                     f"{self.n + 1}..{self.n + self.args.replicas}" if self.args.replicas > 1
                     else f"daemon at {self.hosts.daemon_addr}")
            self.say(f"network namespaces {self.hosts.namespaces()} on bridge "
                     f"{self.hosts.prefix}-br, {where}")
        kinds = [k for k in (self.args.faults.split(",") if self.args.faults else ALL_KINDS) if k]
        for k in kinds:
            if k not in ALL_KINDS:
                raise SystemExit(f"chaos: unknown fault kind '{k}' (known: {', '.join(ALL_KINDS)})")
        why_not = {}
        if not self.hosts.netns:
            reason = ("needs network namespaces (root, not --loopback)" if self.root
                      else f"needs root for network namespaces (uid {os.geteuid()})")
            why_not["link_down"] = why_not["partition"] = reason
        elif cluster.nft_path() is None:
            why_not["partition"] = "nft not found (apt-get install nftables)"
        if not self.root:
            why_not["disk_full"] = f"needs root to mount a tmpfs (uid {os.geteuid()})"
        if self.n < 2:
            why_not["agent_kill"] = "needs 2 or more hosts (the only agent is the master)"
        if self.torch:
            why_not.update(chaos_torch.NOT_APPLICABLE)
        if self.args.replicas < 2:
            why_not["leader_kill"] = why_not["leader_cut"] = (
                f"needs --replicas 2 or more (--replicas {self.args.replicas})")
        elif not self.hosts.netns:
            why_not["leader_cut"] = ("needs network namespaces (root, not --loopback)" if self.root
                                     else f"needs root for network namespaces "
                                     f"(uid {os.geteuid()})")
        self.kinds = [k for k in kinds if k not in why_not]
        for k in kinds:
            if k in why_not:
                self.skipped[k] = why_not[k]
                self.say(f"SKIP fault {k}: {why_not[k]}")

    def prepare_checkpoint_dir(self):
        if self.root and "disk_full" in self.kinds:
            mount = os.path.join(self.out_dir, "ckptfs")
            os.makedirs(mount, exist_ok=True)
            self.registry.add("mount", mount)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "chaos-ckpt", mount],
                           check=True, capture_output=True, timeout=30)
            self.ckpt_mount = mount
            self.ckpt_dir = os.path.join(mount, "ckpt")
            self.filler = os.path.join(mount, "filler")
        else:
            self.ckpt_dir = os.path.join(self.out_dir, "ckpt")
        os.makedirs(self.ckpt_dir, exist_ok=True)

    def train_args(self, steps, sleep_ms, ckpt_dir, out):
        # The global batch is a multiple of every world size MIN..MAX x nproc, and the
        # dataset a multiple of the batch, so every generation splits the same samples.
        lcm = 1
        for k in range(self.min_nodes, self.max_nodes + 1):
            lcm = lcm * (k * self.nproc) // math.gcd(lcm, k * self.nproc)
        batch = lcm * max(1, -(-48 // lcm))
        return ["--backend", "gloo", "--hidden", "64", "--depth", "2", "--features", "32",
                "--global-batch", str(batch), "--dataset-size", str(batch * 85),
                "--bucket-mb", "0.004", "--steps", str(steps), "--log-every", "1",
                "--checkpoint-dir", ckpt_dir, "--checkpoint-every", str(self.interval),
                "--collective-timeout", "30", "--step-sleep-ms", str(sleep_ms), "--out", out]

    def run_reference(self):
        """The fault-free run: one host, same model and flags, no step sleep."""
        out = os.path.join(self.out_dir, "reference.bin")
        args = [MUSTER, "--standalone", "--nproc-per-node", str(self.nproc), "--no-python", TRAIN]
        args += self.train_args(self.steps_total, 0, os.path.join(self.out_dir, "ref-ckpt"), out)
        started = time.monotonic()
        proc = cluster.Proc(args, "reference", self.log, self.registry, env=self.env())
        code = proc.wait(120)
        if code is None:
            proc.kill(group=True)
            raise InvariantError("the fault-free reference run finishes",
                                 f"still running after 120 s:\n{self.log.tail('reference')}")
        if code != 0 or not os.path.exists(out):
            raise InvariantError("the fault-free reference run finishes",
                                 f"exit {code}:\n{self.log.tail('reference')}")
        self.say(f"fault-free reference: {self.steps_total} steps on one host ({self.nproc} "
                 f"workers, no step sleep) in "
                 f"{time.monotonic() - started:.1f}s")
        return chaos_checks.read_floats(out)

    def env(self, **extra):
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("PET_") or key in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"):
                del env[key]
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def start_daemon(self, port=0):
        k = len(self.daemons)
        args = self.hosts.wrap("daemon", [MUSTERD, "--host", self.hosts.daemon_addr,
                                          "--port", str(port), "--rdzv-conf", RDZV_CONF])
        proc = cluster.Proc(args, f"musterd-{k}", self.log, self.registry, env=self.env())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for _, source, stream, text in self.log.since():
                m = re.search(r"listening on [^:]+:(\d+)", text)
                if source == proc.name and stream == "out" and m:
                    self.port = int(m.group(1))
                    self.daemon = proc
                    self.daemons.append(proc)
                    return proc
            if not proc.alive():
                break
            time.sleep(0.01)
        raise InvariantError("musterd starts", f"no 'listening on' line (exit {proc.popen.poll()}):"
                             f"\n{self.log.tail(proc.name)}")

    def start_replicas(self):
        """etcd and --replicas musterd replicas; returns once one leads (chaos_replicas.py)."""
        self.replicas = chaos_replicas.Replicas(self.args.replicas, self.hosts, self.n + 1,
                                                self.out_dir, self.log, self.registry,
                                                self.env, RDZV_CONF)
        self.replicas.start()
        lead = self.replicas.leader()
        self.say(f"{self.args.replicas} musterd replicas at {self.replicas.endpoints()} on etcd "
                 f"{self.replicas.etcd_addr}:{self.replicas.etcd_ports[0]}; {lead.address} leads")

    def rdzv_endpoint(self):
        """The agents' --rdzv-endpoint: the daemon, or every replica."""
        if self.replicas:
            return self.replicas.endpoints()
        return f"{self.hosts.daemon_addr}:{self.port}"

    def leader_endpoint(self):
        """(address, port) of the daemon that serves now (with replicas: the leader's)."""
        if self.replicas:
            lead = self.replicas.leader()
            if lead:
                return lead.addr, lead.port
        return self.hosts.daemon_addr, self.port

    def rendezvous_procs(self):
        """The rendezvous' processes that must stay up: musterd, or etcd and the replicas."""
        if self.replicas:
            return self.replicas.procs()
        return [self.daemon] if self.daemon else []

    def start_agent(self, i):
        k = self.incarnation.get(i, 0)
        self.incarnation[i] = k + 1
        args = [MUSTER, "--nnodes", f"{self.min_nodes}:{self.max_nodes}",
                "--nproc-per-node", str(self.nproc), "--rdzv-backend", "c10d",
                "--rdzv-endpoint", self.rdzv_endpoint(), "--rdzv-id", RUN_ID,
                "--rdzv-conf", RDZV_CONF, "--max-restarts", "1000",
                "--local-addr", self.hosts.host_addr(i), "--hang-timeout", str(HANG_TIMEOUT),
                "--shutdown-timeout", "3", "--recovery", self.args.recovery]
        if self.torch:
            args += ["--python", chaos_torch.PYTHON]
            args += chaos_torch.worker_command(self.records, self.steps_total, self.step_log.path,
                                               self.step_sleep_s)
            # Gloo binds where the hostname resolves (loopback here) unless told.
            # Its in-place records come from the agents' info lines (as under ctest).
            env = self.env(CHAOS_HOST=i, GLOO_SOCKET_IFNAME=self.hosts.interface(i),
                           MUSTER_LOG_LEVEL=os.environ.get("MUSTER_LOG_LEVEL", "info"),
                           **chaos_torch.env_vars())
        else:
            args += ["--no-python", WRAPPER, self.records, TRAIN]
            args += self.train_args(self.steps_total, self.args.step_sleep_ms, self.ckpt_dir,
                                    self.final_out)
            env = self.env(CHAOS_HOST=i)
        proc = cluster.Proc(self.hosts.wrap(i, args), f"agent-h{i}-{k}", self.log, self.registry,
                            env=env)
        proc.host = i
        self.agents[i] = proc
        self.all_agents.append(proc)
        return proc

    # ------------------------------------------------------------ observing

    def record_rejoin(self, t, source, m):
        """Writes the record chaos_worker.py would have written for a worker that
        joined generation m's in place (it did not start again): the same fields,
        its start being the agent's rejoin line, and no overlap (it paused)."""
        gen, rank, world, group_rank, group_world, master, pid = m.groups()
        agent = next((a for a in self.all_agents if a.name == source), None)
        record = {"gen": int(gen), "rank": int(rank), "pid": int(pid),
                  "ppid": agent.pid if agent else 0, "ticks": cluster.proc_start_ticks(int(pid)),
                  "start": t, "world_size": int(world), "group_rank": int(group_rank),
                  "group_world_size": int(group_world), "master": master,
                  "host": agent.host if agent else -1, "steps": None, "overlap": [],
                  "in_place": True}
        path = os.path.join(self.records, f"g{gen}_r{rank}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(record, f)
        os.rename(path + ".tmp", path)

    def parse(self):
        """Folds new log lines into steps, resumes, agent lines and generation events."""
        lines = self.log.since(self._parsed)
        self._parsed += len(lines)
        for t, source, stream, text in lines:
            if source.startswith("musterd-"):
                m = SILENT_RE.search(text)
                if m:
                    self.silent_deaths.append((t, int(m.group(1)), text, source))
                continue
            if not source.startswith("agent-"):
                continue
            if stream == "err":
                self.agent_err.append((t, source, text))
            if stream == "out":
                m = STEP_RE.match(text)
                if m:
                    self.steps.append((t, int(m.group(1))))
                    continue
                m = RESUMED_RE.match(text)
                if m:
                    self.resumes.append((t, int(m.group(1))))
            elif text.startswith("muster:"):
                self.agent_lines.append((t, source, text))
                m = GEN_RE.search(text)
                if m:
                    self.gen_events.append((t, source, int(m.group(1)), int(m.group(2)),
                                            int(m.group(3))))
                if "event=run_ended" in text:
                    self.job_done = True
                m = REJOIN_RE.search(text)
                if m:
                    self.record_rejoin(t, source, m)
        if self.step_log is not None:
            # The torch script's progress: rank 0's lines, at the time it wrote them.
            for t, rank, step, pid in self.step_log.new():
                self.last_step[pid] = max(step, self.last_step.get(pid, 0))
                if rank == 0:
                    self.steps.append((t, step))

    def furthest_step(self):
        self.parse()
        return max((s for _, s in self.steps), default=0)

    def first_step_after(self, t0):
        self.parse()
        return next((t for t, _ in self.steps if t > t0), None)

    def gens(self):
        return chaos_checks.generations(self.records)

    def stepping_generation(self, after_t=None, world=None):
        """(gen, t of its first step) for the newest generation when it is complete,
        started after after_t, has `world` workers, and rank 0 stepped after its last
        worker started (so every rank passed a collective in it); else None."""
        self.parse()
        gens = self.gens()
        if not gens:
            return None
        newest = max(gens)
        ranks = gens[newest]
        if not chaos_checks.complete(ranks):
            return None
        first = min(r["start"] for r in ranks.values())
        last = max(r["start"] for r in ranks.values())
        if after_t is not None and first <= after_t:
            return None
        if world is not None and len(ranks) != world:
            return None
        later = [t for t, _ in self.steps if t > last]
        if len(later) < 2:
            return None
        return newest, later[0]

    def wait(self, predicate, timeout, interval=0.02):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            self.check_processes()
            self.dump_if_stalled()
            time.sleep(interval)
        return predicate()

    def dump_if_stalled(self):
        """--trainer torch: when no step came for chaos_torch.STALL_S, every live worker
        prints its threads' Python stacks into its agent's log (SIGUSR1, which
        chaos_torch_worker.py hands to faulthandler), once per stall."""
        if not self.torch:
            return
        self.parse()
        if not self.steps or self.job_done:
            return
        last = max(t for t, _ in self.steps)
        if time.time() - last < chaos_torch.STALL_S or self.stall_dumped == last:
            return
        self.stall_dumped = last
        workers = {(r["pid"], r["ticks"]) for ranks in self.gens().values()
                   for r in ranks.values()}
        alive = sorted(pid for pid, ticks in workers if cluster.pid_alive(pid, ticks))
        for pid, ticks in workers:
            cluster.kill_pid(pid, ticks, sig=signal.SIGUSR1)
        self.say(f"no step for {chaos_torch.STALL_S:.0f}s (the last at {last - self.t0:.2f}s): "
                 f"SIGUSR1 to workers {alive}; their Python stacks are in the agents' logs")

    def check_processes(self):
        """Agents and the daemon never exit on their own while the job runs."""
        if self.job_done:
            return
        for proc in list(self.agents.values()) + self.rendezvous_procs():
            if proc.pid in self.expected_dead or proc.alive():
                continue
            self.parse()
            if self.job_done:
                return
            raise InvariantError("agents and the daemon stay up",
                                 f"{proc.name} (pid {proc.pid}) exited with "
                                 f"{proc.popen.poll()} on its own:\n{self.log.tail(proc.name)}")

    def status(self):
        """The daemon's status document of the run (muster status --json), or None."""
        addr, port = self.leader_endpoint()
        args = self.hosts.wrap("daemon", [MUSTER, "status", "--rdzv-endpoint", f"{addr}:{port}",
                                          "--run-id", RUN_ID, "--json"])
        try:
            res = subprocess.run(args, capture_output=True, text=True, timeout=5)
            runs = json.loads(res.stdout).get("runs", [])
            return runs[0] if runs else None
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return None

    def current(self):
        """The newest complete generation's {rank: record}."""
        gens = self.gens()
        for gen in sorted(gens, reverse=True):
            if chaos_checks.complete(gens[gen]):
                return gen, gens[gen]
        return None, {}

    def wait_steady(self, what, timeout=RESTORE_TIMEOUT):
        found = self.wait(lambda: self.stepping_generation(world=self.full_world), timeout)
        if not found:
            gens = self.gens()
            raise InvariantError("the job recovers",
                                 f"{what}: no generation with all {self.full_world} workers "
                                 f"stepping within {timeout:.0f}s; generations "
                                 f"{ {g: len(r) for g, r in sorted(gens.items())[-5:]} }, furthest "
                                 f"step {self.furthest_step()}\n" + self.agent_tails())
        return found

    def agent_tails(self, n=15):
        return "\n".join(f"--- {p.name}:\n{self.log.tail(p.name, n)}" for p in self.all_agents[-6:])

    # ------------------------------------------------------------ invariants

    def check_invariants(self, when, checkpoints_behind_ok=False):
        """Checks the invariants; a violation is recorded (and printed once) and the run
        goes on, so one violation does not hide the faults after it. Returns the newest
        checkpoint step and the temp files seen. `checkpoints_behind_ok`: the disk is
        full and the job goes on in place, so the newest checkpoint may be older than
        one interval (every checkpoint must still be whole)."""
        furthest = self.furthest_step()
        gens = self.gens()
        for error in chaos_checks.generation_violations(gens, self.min_nodes, self.max_nodes,
                                                        self.nproc):
            self.violation(error, when, self.overlap_evidence(error, gens))
        self.check_heartbeats(when)
        if self.replicas:
            for a, b in self.replicas.overlaps():
                self.violation(InvariantError(
                    "never two replicas serving at once",
                    f"{a[0]} led (epoch {a[1]}) from {a[2] - self.t0:.3f}s to "
                    + (f"{a[3] - self.t0:.3f}s" if a[3] else "now")
                    + f", and {b[0]} took the lead (epoch {b[1]}) at {b[2] - self.t0:.3f}s"),
                    when, self.replicas.tails())
        if self.torch:
            return None, []  # no checkpoints
        try:
            if checkpoints_behind_ok:
                furthest = 0
            return chaos_checks.check_checkpoints(self.ckpt_dir, furthest, self.interval)
        except InvariantError as error:
            self.violation(error, when)
            return None, []

    def check_heartbeats(self, when):
        """A running agent we neither cut off (link_down, partition) nor killed is never
        declared silent by the daemon: its heartbeats must go on whatever its workers do."""
        self.parse()
        for t, pid, line, source in self.silent_deaths:
            agent = next((a for a in self.all_agents if a.pid == pid), None)
            if agent is None or pid in self.expected_dead:
                continue
            # A replica whose own link is cut hears nobody until it steps down.
            excused = any(((f.kind in ("link_down", "partition") and f.host == agent.host) or
                           (f.kind == "leader_cut" and f.replica == source)) and
                          f.t <= t <= (f.restored or time.time()) + 3 for f in self.faults)
            if excused:
                continue
            last = [x for x in self.agent_lines if x[1] == agent.name and x[0] <= t]
            quiet = t - last[-1][0] if last else float("nan")
            error = InvariantError(
                "a running, reachable agent keeps heart-beating",
                f"musterd declared {agent.name} (pid {pid}, host {agent.host}) dead as silent at "
                f"{t - self.t0:.3f}s: '{line}'; no fault had cut it off; its last own log "
                f"line came {quiet:.3f}s earlier")
            if any(str(e) == str(error) for e in self.failures):
                continue
            self.violation(error, when, self.diagnose(agent, t))

    def diagnose(self, agent, t):
        """What a silent agent is doing: its log around t, its state, its threads' stacks."""
        out = [f"  {agent.name}'s own lines up to 2 s after:"]
        out += [f"    {x[0] - self.t0:8.3f}s {x[2]}" for x in self.agent_lines
                if x[1] == agent.name and t - 3 <= x[0] <= t + 2][-12:]
        try:
            with open(f"/proc/{agent.pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{agent.pid}/wchan") as f:
                wchan = f.read().strip()
            out.append(f"  now ({time.time() - self.t0:.3f}s): state {state}, wchan {wchan}, "
                       f"alive {agent.alive()}")
        except OSError as e:
            out.append(f"  /proc/{agent.pid}: {e}")
            return "\n".join(out)
        path = os.path.join(self.out_dir, f"diagnose-{agent.name}.txt")
        try:
            res = subprocess.run(["gdb", "-p", str(agent.pid), "-batch", "-ex",
                                  "thread apply all bt"], capture_output=True, text=True,
                                 timeout=60)
            with open(path, "w") as f:
                f.write(res.stdout + res.stderr)
            frames = [ln for ln in res.stdout.splitlines() if ln.startswith(("#", "Thread"))]
            out.append(f"  gdb backtrace (all threads, full text in {path}):")
            out += [f"    {ln[:160]}" for ln in frames[:40]]
        except (OSError, subprocess.TimeoutExpired) as e:
            out.append(f"  gdb: {e!r}")
        return "\n".join(out)

    def violation(self, error, when, evidence=""):
        if any(str(e) == str(error) for e in self.failures):
            return
        error.context = evidence
        self.failures.append(error)
        self.say(f"VIOLATION (checked {when}): {error}" + (f"\n{evidence}" if evidence else ""))

    def overlap_evidence(self, error, gens):
        """For an overlap: what the old worker's agent logged around the new worker's start."""
        m = re.search(r"started at ([\d.]+)\) started while these were still alive: "
                      r"gen (\d+) rank (\d+) pid (\d+) on host (\d+)", str(error))
        if not m:
            return ""
        start, host = float(m.group(1)), int(m.group(5))
        self.parse()
        lines = [f"    {t - self.t0:8.3f}s {src}: {text}" for t, src, text in self.agent_lines
                 if src.startswith(f"agent-h{host}-") and start - 4 <= t <= start + 4]
        return (f"  new worker started at {start - self.t0:.3f}s; agent lines of host {host} "
                f"around it:\n" + "\n".join(lines[-14:]))

    # ------------------------------------------------------------ faults

    def pick_worker(self):
        gen, ranks = self.current()
        rank = self.rng.randrange(len(ranks))
        return gen, ranks[rank]

    def detect(self, fault, after=None):
        """The first agent line after the fault: (t, line) or None."""
        self.parse()
        for t, source, text in self.agent_lines:
            if t > (after or fault.t):
                return t, f"{source}: {text}"
        return None

    def wait_recovered(self, fault, timeout=RECOVERY_TIMEOUT):
        found = self.wait(lambda: self.stepping_generation(after_t=fault.t), timeout)
        if not found:
            self.check_heartbeats(f"{fault.kind} did not recover")
            raise InvariantError("the job recovers",
                                 f"{fault.kind} ({fault.target}) at {fault.t - self.t0:.2f}s: no "
                                 f"new generation complete and stepping within {timeout:.0f}s\n"
                                 + self.agent_tails())
        fault.recovered = found[1]
        return found

    def restore_agent(self, host):
        self.start_agent(host)

    def inject(self, kind):
        """Injects one fault of `kind`, waits for recovery, undoes it. Returns the Fault."""
        gen, ranks = self.current()
        master_rec = ranks[0]
        fault = Fault(kind, "")
        restore = None  # a callable that undoes the fault
        generation_expected = True
        lost = set()  # the pids of the workers the fault takes (kept-in-place count)
        if kind in ("worker_kill", "worker_hang"):
            gen, rec = self.pick_worker()
            fault.target = f"gen {gen} rank {rec['rank']} pid {rec['pid']} host {rec['host']}"
            sig = signal.SIGKILL if kind == "worker_kill" else signal.SIGSTOP
            fault.t = time.time()
            cluster.kill_pid(rec["pid"], rec["ticks"], sig=sig)
            lost = {rec["pid"]}
            if kind == "worker_hang":
                restore = lambda: cluster.kill_pid(rec["pid"], rec["ticks"], sig=signal.SIGCONT)  # noqa: E731
        elif kind in ("agent_kill", "master_kill"):
            if kind == "master_kill":
                host = master_rec["host"]
            else:
                host = self.rng.choice(sorted(h for h in self.agents if h != master_rec["host"]))
            agent = self.agents[host]
            fault.target = f"host {host} agent {agent.name} pid {agent.pid}"
            lost = {r["pid"] for r in ranks.values() if r["host"] == host}
            self.expected_dead.add(agent.pid)
            fault.t = time.time()
            agent.kill()
            restore = lambda: self.restore_agent(host)  # noqa: E731
        elif kind == "daemon_kill" and self.replicas or kind in REPLICA_KINDS:
            return self.inject_replica_fault(fault)
        elif kind == "daemon_kill":
            fault.target = f"musterd pid {self.daemon.pid} port {self.port}"
            self.expected_dead.add(self.daemon.pid)
            fault.t = time.time()
            self.daemon.kill()
            generation_expected = False
        elif kind == "link_down":
            host = self.rng.randrange(1, self.n + 1)
            fault.target = f"host {host} link {self.hosts.prefix}-h{host}"
            fault.host = host
            lost = {r["pid"] for r in ranks.values() if r["host"] == host}
            fault.t = time.time()
            self.hosts.link(host, "down")
            restore = lambda: self.hosts.link(host, "up")  # noqa: E731
        elif kind == "partition":
            host = self.rng.randrange(1, self.n + 1)
            # With replicas: from every one of them (from the leader alone, the
            # standbys would keep the agent's workers up to failover_timeout).
            port, addrs = ((chaos_replicas.RDZV_PORT, [r.addr for r in self.replicas.replicas])
                           if self.replicas else (self.port, None))
            fault.target = (f"host {host} <-/-> {','.join(addrs or [self.hosts.daemon_addr])}"
                            f":{port}")
            fault.host = host
            lost = {r["pid"] for r in ranks.values() if r["host"] == host}
            fault.t = time.time()
            self.hosts.partition(host, port, True, addrs)
            restore = lambda: self.hosts.partition(host, port, False)  # noqa: E731
        elif kind == "ckpt_kill":
            self.inject_ckpt_kill(fault, master_rec)
        elif kind == "disk_full":
            return self.inject_disk_full(fault)
        elif kind == "flood":
            return self.inject_flood(fault)
        self.faults.append(fault)
        self.say(f"FAULT {kind}: {fault.target}")

        if kind == "daemon_kill":
            time.sleep(0.3)  # a moment without any daemon
            self.start_daemon(self.port)
            fault.restored = time.time()
            self.wait_daemon_recovered(fault, gen)
            recovered_gen, _ = self.current()
        else:
            recovered_gen, _ = self.wait_recovered(fault)
            if restore:
                restore()
                fault.restored = time.time()
        self.count_kept(fault, kind, ranks, recovered_gen, lost)
        found = self.detect(fault)
        if found:
            fault.detected, fault.detect_line = found
        self.check_invariants(kind)
        if generation_expected or fault.restored:
            steady_gen, _ = self.wait_steady(f"after undoing {kind}")
            self.count_kept(fault, f"{kind} undone", self.gens().get(recovered_gen, {}),
                            steady_gen, set())
        return fault

    def count_kept(self, fault, what, before, after_gen, lost):
        """--trainer torch: when generation after_gen is not the one `before` ({rank:
        record}) was, records how many of before's workers not in `lost` (pids) are
        the same process in it (a recovery in place keeps them all)."""
        if not self.torch or not before:
            return
        after = self.gens().get(after_gen, {})
        if not after or next(iter(before.values()))["gen"] == after_gen:
            return
        kept, survivors = chaos_torch.survivors_kept(before, after, lost)
        self.kept.append((what, kept, survivors))
        fault.notes.append(f"{what}: {kept} of {survivors} surviving workers kept their "
                           f"process into gen {after_gen}")

    def wait_daemon_recovered(self, fault, gen_before):
        """After a daemon restart: every node is known again (status) and the job steps."""
        def rebuilt():
            st = self.status()
            if not st or st.get("state") != "running":
                return None
            nodes = st.get("nodes", [])
            if len(nodes) == self.n and all(n.get("connected") and n.get("state") == "member"
                                            for n in nodes):
                return time.time(), st.get("generation")
            return None
        found = self.wait(rebuilt, RECOVERY_TIMEOUT, interval=0.05)
        if not found:
            raise InvariantError("the job recovers",
                                 f"daemon_kill: the restarted daemon did not know all {self.n} "
                                 f"nodes as connected members within {RECOVERY_TIMEOUT:.0f}s: "
                                 f"{self.status()}\n" + self.agent_tails())
        known_at, gen_now = found
        stepped = self.wait(lambda: self.first_step_after(known_at), 10)
        if not stepped:
            raise InvariantError("the job recovers", "daemon_kill: no step after the daemon "
                                 "knew every node again\n" + self.agent_tails())
        fault.recovered = stepped
        gen_seen, _ = self.current()
        if gen_now != gen_before or gen_seen != gen_before:
            fault.notes.append(f"workers restarted: generation {gen_before} -> {gen_now} "
                               "(the daemon restart promises none)")

    def inject_replica_fault(self, fault):
        """leader_kill, leader_cut, and daemon_kill with replicas (a standby's SIGKILL).

        No agent and no worker is touched, so no membership changes: every agent must
        end up on the leader (a new one unless a standby died) and the job keep stepping
        in the same generation. Recovery is the first step after the last agent's
        `event=rdzv_leader` naming the new leader. Once the new leader has rebuilt the
        run and failover_timeout has passed, no worker may have restarted. Undo: the
        replica started again on its address, or its link up; done when it names the
        leader (a standby)."""
        kind = fault.kind
        gen, ranks = self.current()
        lead = self.replicas.leader()
        if lead is None:
            raise InvariantError("one replica leads", f"before {kind}: no replica serves\n"
                                 + self.replicas.tails())
        victim = lead if kind in REPLICA_KINDS else self.rng.choice(
            [r for r in self.replicas.replicas if r is not lead])
        fault.replica = victim.proc.name
        fault.target = (f"{'leader' if victim is lead else 'standby'} {victim.address} "
                        f"({victim.proc.name} pid {victim.proc.pid})")
        if kind == "leader_cut":
            fault.target += f", link {self.hosts.prefix}-h{victim.host} down"
        self.faults.append(fault)
        self.say(f"FAULT {kind}: {fault.target}")
        fault.t = time.time()
        if kind == "leader_cut":
            self.hosts.link(victim.host, "down")
        else:
            self.expected_dead.add(victim.proc.pid)
            self.replicas.kill(victim)

        new = lead
        followed = fault.t
        if victim is lead:
            new = self.wait(lambda: (self.replicas.leader() not in (None, victim)
                                     and self.replicas.leader()), RECOVERY_TIMEOUT)
            if not new:
                raise InvariantError("the job recovers",
                                     f"{kind}: no other replica took the lead within "
                                     f"{RECOVERY_TIMEOUT:.0f}s\n" + self.replicas.tails())
            led = self.replicas.led_since(new, fault.t)
            fault.notes.append(f"{new.address} led at +{led - fault.t:.2f}s")
            want = f"event=rdzv_leader endpoint={new.address} "

            def all_on_new_leader():
                self.parse()
                seen = [next((t for t, source, text in self.agent_lines if t > fault.t and
                              source == a.name and want in text), None)
                        for a in self.agents.values()]
                return max(seen) if seen and None not in seen else None
            followed = self.wait(all_on_new_leader, RECOVERY_TIMEOUT)
            if not followed:
                raise InvariantError("the job recovers",
                                     f"{kind}: not every agent followed the new leader "
                                     f"{new.address} within {RECOVERY_TIMEOUT:.0f}s\n"
                                     + self.agent_tails() + "\n" + self.replicas.tails())
        stepped = self.wait(lambda: self.first_step_after(followed), RECOVERY_TIMEOUT)
        if not stepped:
            raise InvariantError("the job recovers", f"{kind}: no step within "
                                 f"{RECOVERY_TIMEOUT:.0f}s after every agent was on the leader "
                                 f"{new.address}\n" + self.agent_tails()
                                 + f"\n--- {new.proc.name}:\n{self.log.tail(new.proc.name)}")
        fault.recovered = stepped
        settle = fault.t + FAILOVER_TIMEOUT + 1.0
        if victim is lead:
            # Until the rebuild, or a new generation that shows there will be none.
            self.wait(lambda: self.replicas.rebuilt(new, fault.t) or max(self.gens()) > gen,
                      RECOVERY_TIMEOUT)
            rebuilt = self.replicas.rebuilt(new, fault.t)
            if rebuilt:
                fault.notes.append(f"rebuilt gen {rebuilt[1]} ({rebuilt[2]} nodes) at "
                                   f"+{rebuilt[0] - fault.t:.2f}s")
                # A round the rebuild would have opened shows within last_call_timeout.
                settle = max(settle, rebuilt[0] + 1.5)
            else:
                fault.notes.append("the new leader logged no event=rebuilt")
        self.wait(lambda: time.time() >= settle, settle - time.time() + 1, interval=0.05)
        self.parse()
        fenced = sorted({source for t, source, text in self.agent_lines
                         if t > fault.t and "event=fence " in text})
        # The agents' own bound: failover_timeout after their last word from the leader
        # (the quiet line's ms says how long before it that was).
        quiet = [t - int(m.group(1)) / 1000.0 for t, _, text in self.agent_lines
                 if t > fault.t and (m := re.search(
                     rf"event=rdzv_leader_quiet endpoint={re.escape(victim.address)} ms=(\d+)",
                     text))]
        if quiet:
            fault.notes.append(f"agents' failover deadline +"
                               f"{min(quiet) + FAILOVER_TIMEOUT - fault.t:.2f}s")
        if fenced:
            fault.notes.append(f"fenced: {', '.join(fenced)}")
        try:
            chaos_checks.check_workers_kept(gen, ranks, self.gens(), cluster.pid_alive)
            if victim is lead and not self.replicas.rebuilt(new, fault.t):
                raise InvariantError("a new leader rebuilds the run from the agents' reports",
                                     f"{kind}: {new.proc.name} logged no event=rebuilt\n"
                                     + self.log.tail(new.proc.name))
        except InvariantError as error:
            self.violation(error, kind, self.replica_evidence(fault, new))

        if kind != "leader_cut":
            time.sleep(0.3)  # a moment without it, as daemon_kill
        # Taken before the restore: a restarted replica's reader thread can log its first
        # view before start_replica returns, and that view is the one to find.
        restoring = time.time()
        if kind == "leader_cut":
            self.hosts.link(victim.host, "up")
        else:
            self.replicas.start_replica(victim)
        fault.restored = time.time()
        back = self.wait(lambda: self.replicas.views(victim, self.replicas.leader() or new,
                                                     restoring), RESTORE_TIMEOUT)
        if not back:
            raise InvariantError("a restored replica rejoins as a standby",
                                 f"{kind}: {victim.proc.name} did not name the leader "
                                 f"{(self.replicas.leader() or new).address} within "
                                 f"{RESTORE_TIMEOUT:.0f}s of being restored\n"
                                 + self.log.tail(victim.proc.name))
        found = self.detect(fault)
        if found:
            fault.detected, fault.detect_line = found
        self.check_invariants(kind)
        self.wait_steady(f"after undoing {kind}")
        return fault

    def replica_evidence(self, fault, leader):
        """The agents' lines and the new leader's since the fault, for a violation."""
        self.parse()
        out = [f"  agent lines since the fault ({fault.t - self.t0:.3f}s):"]
        out += [f"    {t - self.t0:8.3f}s {source}: {text[:200]}"
                for t, source, text in self.agent_lines if t >= fault.t][:40]
        out.append(f"  {leader.proc.name} since the fault:")
        out += [f"    {t - self.t0:8.3f}s {text[:200]}" for t, source, _, text in self.log.since()
                if source == leader.proc.name and t >= fault.t][:30]
        return "\n".join(out)

    def inject_ckpt_kill(self, fault, master_rec):
        watch = Inotify(self.ckpt_dir)
        try:
            deadline = time.monotonic() + 20
            temp = None
            while time.monotonic() < deadline and temp is None:
                for name in watch.names(0.5):
                    if chaos_checks.CKPT_TEMP.match(name):
                        temp = name
                        break
                self.check_processes()
            if temp is None:
                raise InvariantError("checkpoints are written",
                                     f"no checkpoint temp file appeared in {self.ckpt_dir} in 20s")
            fault.t = time.time()
            cluster.kill_pid(master_rec["pid"], master_rec["ticks"])
        finally:
            watch.close()
        still = os.path.exists(os.path.join(self.ckpt_dir, temp))
        fault.target = (f"rank 0 pid {master_rec['pid']} host {master_rec['host']} while writing "
                        f"{temp}")
        fault.notes.append("killed mid-save (temp file still there)" if still
                           else "the save finished before the SIGKILL landed")

    def inject_disk_full(self, fault):
        """Fills the checkpoint tmpfs; the next save must fail with a clear error and leave
        no corrupt checkpoint; once space is freed, checkpoints must be written again."""
        fault.target = f"tmpfs {self.ckpt_mount} (1 MiB) filled"
        fault.t = time.time()
        written = 0
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (65536, 4096, 512, 1):  # down to the last partial block
                block = b"\0" * size
                while True:
                    try:
                        written += os.write(fd, block)
                    except OSError as e:
                        if e.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)
        self.faults.append(fault)
        self.say(f"FAULT disk_full: {fault.target} ({written // 1024} KiB of filler)")
        def enospc():
            self.parse()
            for t, source, text in self.agent_err:
                if t > fault.t and "No space left" in text:
                    return t, f"{source}: {text}"
            return None
        clear = self.wait(enospc, 30)
        if not clear:
            raise InvariantError("a full disk fails the checkpoint write with a clear error",
                                 "no 'No space left on device' message within 30 s of filling "
                                 f"{self.ckpt_mount}\n" + self.agent_tails())
        fault.notes.append(f"error: {clear[1][:200]}")
        if self.args.recovery == "in-place":
            # The save fails and training goes on in place (the state is alive):
            # no new generation; the checkpoints may fall behind until space is freed.
            stepped = self.wait(lambda: self.first_step_after(clear[0]), RECOVERY_TIMEOUT)
            if not stepped:
                raise InvariantError("the job recovers",
                                     "disk_full: no step after the failed save within "
                                     f"{RECOVERY_TIMEOUT:.0f}s\n" + self.agent_tails())
            fault.detected, fault.recovered = clear[0], stepped
            newest, temps = self.check_invariants("disk_full", checkpoints_behind_ok=True)
        else:
            self.wait_recovered(fault)
            found = self.detect(fault)
            if found:
                fault.detected, fault.detect_line = found
            newest, temps = self.check_invariants("disk_full")
        if temps:
            fault.notes.append(f"temp files left while full: {temps}")
        os.unlink(self.filler)
        fault.restored = time.time()
        # Checkpoints must resume: one newer than any written before freeing.
        resumed = self.wait(lambda: any(s > (newest or 0) and why is None for s, why in
                                        chaos_checks.scan_checkpoints(self.ckpt_dir)[0].items()),
                            RESTORE_TIMEOUT)
        if not resumed:
            raise InvariantError("checkpoints are written again once space is freed",
                                 f"no checkpoint after step {newest} within "
                                 f"{RESTORE_TIMEOUT:.0f}s of freeing {self.ckpt_mount}\n"
                                 + self.agent_tails())
        self.check_invariants("disk_full freed")
        self.wait_steady("after freeing the disk")
        return fault

    def inject_flood(self, fault):
        """Garbage, oversized frames and 10k connections at musterd; it must survive and the
        job go on (ideally without a new generation)."""
        gen_before, _ = self.current()
        daemon = self.daemon
        if self.replicas:  # the leader: it serves
            lead = self.replicas.leader()
            if lead is None:
                raise InvariantError("one replica leads", "before flood: no replica serves\n"
                                     + self.replicas.tails())
            daemon = lead.proc
        addr, port = self.leader_endpoint()
        fault.target = f"musterd {addr}:{port}"
        self.faults.append(fault)
        self.say(f"FAULT flood: {fault.target}")
        fault.t = time.time()
        # From host 1's namespace (any host reaches the daemon; loopback: no namespace).
        args = self.hosts.wrap(1, [cluster.PYTHON, FLOOD, addr, str(port),
                                   str(self.rng.randrange(1 << 30)), "--connections", "10000",
                                   "--hold", "2"])
        proc = cluster.Proc(args, f"flood-{len(self.faults)}", self.log, self.registry,
                            env=self.env())
        code = proc.wait(90)
        if code is None:
            proc.kill(group=True)
        for th in proc.threads:
            th.join(timeout=5)
        out = [text for _, s, stream, text in self.log.since() if s == proc.name and stream == "out"]
        try:
            report = json.loads(out[-1])
        except (IndexError, ValueError):
            report = None
        if report is None:
            raise InvariantError("the daemon survives garbage and 10k connections",
                                 f"the flood helper failed (exit {code}):\n"
                                 f"{self.log.tail(proc.name)}")
        c = report["connections"]
        fault.notes.append(f"garbage {report['garbage']['closed_by_daemon']}/16 closed, "
                           f"{report['garbage']['error_frames']} error frames; oversized "
                           f"{report['oversized']['closed_by_daemon']}/4 closed; "
                           f"{c['established']}/{c['asked']} connections in {c['open_seconds']}s"
                           f" (failed {c['failed']}); Hello after: "
                           f"{'Welcome' if report['welcomed_after'] else 'NO WELCOME'}")
        if not daemon.alive():
            raise InvariantError("the daemon survives garbage and 10k connections",
                                 f"musterd exited {daemon.popen.poll()}:\n"
                                 f"{self.log.tail(daemon.name)}")
        if not report["welcomed_after"]:
            raise InvariantError("the daemon survives garbage and 10k connections",
                                 f"a Hello after the flood was not welcomed: {report}")
        far = self.furthest_step()
        stepped = self.wait(lambda: self.furthest_step() > far + 2 or
                            self.stepping_generation(after_t=fault.t), RECOVERY_TIMEOUT)
        if not stepped:
            raise InvariantError("the job goes on during a flood",
                                 f"no progress within {RECOVERY_TIMEOUT:.0f}s after the flood\n"
                                 + self.agent_tails())
        fault.recovered = self.first_step_after(proc.started)
        gen_after, _ = self.current()
        if gen_after != gen_before:
            fault.notes.append(f"the generation changed during the flood: {gen_before} -> "
                               f"{gen_after}")
        found = self.detect(fault)
        if found and found[0] < time.time():
            fault.detected, fault.detect_line = found
        self.check_invariants("flood")
        self.wait_steady("after the flood")
        return fault

    # ------------------------------------------------------------ the run

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

    # ------------------------------------------------------------ report

    def steps_redone(self):
        """Progress lines for a step already reported before. Each is charged to the
        latest fault injected before the generation that printed it started (the
        generation running at the line's time); the wind-down's own are not counted."""
        seen = set()
        for fault in self.faults:
            fault.redone = 0
        faults = sorted((f for f in self.faults if f.t), key=lambda f: f.t)
        starts = sorted(min(r["start"] for r in ranks.values())
                        for ranks in self.gens().values() if chaos_checks.complete(ranks))
        wind_down = getattr(self, "wind_down_t", None)
        for t, step in sorted(self.steps):
            if step in seen:
                began = max((s for s in starts if s <= t), default=t)
                owner = None
                for f in faults:
                    if f.t <= began:
                        owner = f
                if owner and not (wind_down and began >= wind_down):
                    owner.redone += 1
            seen.add(step)

    def table(self):
        self.steps_redone()
        rows = [("fault", "count", "detect p50", "detect p99", "recover p50", "recover p99",
                 "steps redone")]
        by_kind = {}
        for f in self.faults:
            by_kind.setdefault(f.kind, []).append(f)

        def ms(values, q):
            return f"{percentile(values, q) * 1000:.0f} ms" if values else "-"
        for kind in ALL_KINDS:
            fs = by_kind.get(kind, [])
            if not fs:
                rows.append((kind, "0", "", "", "", "", self.skipped.get(kind, "not drawn")[:60]))
                continue
            det = [f.detected - f.t for f in fs if f.detected]
            rec = [f.recovered - f.t for f in fs if f.recovered]
            red = [f.redone for f in fs]
            rows.append((kind, str(len(fs)), ms(det, 50), ms(det, 99), ms(rec, 50), ms(rec, 99),
                         f"{sum(red)} (max {max(red)})"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = []
        for j, r in enumerate(rows):
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
            if j == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def kept_summary(self):
        """How many recoveries kept every surviving worker in its process (in place)."""
        whole = sum(1 for _, kept, survivors in self.kept if kept == survivors)
        kept = sum(k for _, k, _ in self.kept)
        survivors = sum(s for _, _, s in self.kept)
        return (f"workers kept in place: {whole} of {len(self.kept)} recoveries "
                f"({kept} of {survivors} surviving worker processes kept their pid)")

    def write_lines(self, path):
        """Every line of every process with the time it arrived (seconds since the start):
        the per-process files in logs/ have no time of their own for the agents' lines."""
        with open(path, "w") as f:
            for t, source, stream, text in self.log.since():
                f.write(f"{t - self.t0:9.3f} {source}.{stream}: {text}\n")

    def timeline(self, path):
        self.parse()
        t0 = self.t0
        t_end = (getattr(self, "t_end", None) or time.time()) - t0
        gens = self.gens()
        starts = sorted((min(r["start"] for r in ranks.values()) - t0, g,
                         next(iter(ranks.values()))["world_size"])
                        for g, ranks in gens.items() if chaos_checks.complete(ranks))
        bands = [(s, starts[i + 1][0] if i + 1 < len(starts) else t_end, g)
                 for i, (s, g, _) in enumerate(starts)]
        worlds = [(s, w) for s, _, w in starts]
        steps = [(t - t0, s) for t, s in self.steps]
        faults = [(f.t - t0, (f.restored - t0) if f.restored else None, f.kind)
                  for f in self.faults if f.t]
        top = max([s for _, s in steps] + [1])
        colours = chaos_png.draw_timeline(path, t_end, steps, worlds, bands, faults, top,
                                          self.full_world)
        return chaos_png.legend(colours, t_end, top, self.full_world)


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


def teardown(chaos):
    """Kills everything by PID/process group, removes namespaces and mounts; returns leftovers."""
    problems = cluster.cleanup(chaos.registry.path)
    try:
        chaos.reaper.stdin.close()
        chaos.reaper.wait(timeout=60)
    except Exception:  # noqa: BLE001
        pass
    left = list(problems)
    procs = chaos.daemons + chaos.all_agents
    if chaos.replicas:
        procs += chaos.replicas.all_procs()
    alive = [p.name for p in procs if p.ticks is not None and cluster.pid_alive(p.pid, p.ticks)]
    if alive:
        left.append(f"processes still alive: {alive}")
    try:
        workers = [(r["pid"], r["ticks"], g, rank) for g, ranks in chaos.gens().items()
                   for rank, r in ranks.items()]
    except OSError:
        workers = []
    alive_workers = [f"gen {g} rank {r} pid {p}" for p, t, g, r in workers
                     if cluster.pid_alive(p, t)]
    if alive_workers:
        left.append(f"workers still alive: {alive_workers}")
    if chaos.torch:
        # The agents' warm processes and their workers name the records directory.
        # They die with their agent (PR_SET_PDEATHSIG): give them a moment.
        deadline = time.monotonic() + 5
        while (strays := cluster.processes_naming(chaos.records)) and time.monotonic() < deadline:
            time.sleep(0.05)
        if strays:
            left.append(f"processes naming {chaos.records} still alive: {strays}")
    if getattr(chaos, "hosts", None) is not None and chaos.hosts.netns:
        rest = chaos.hosts.leftovers()
        if rest:
            left.append(f"namespaces/links left: {rest}")
    if chaos.ckpt_mount and os.path.ismount(chaos.ckpt_mount):
        left.append(f"still mounted: {chaos.ckpt_mount}")
    return left


def report(chaos):
    print("", flush=True)
    if chaos.faults:
        print(chaos.table(), flush=True)
        for f in chaos.faults:
            if f.t:
                print(f"  {f.t - chaos.t0:7.2f}s {f.kind:12s} {f.target}; detected "
                      f"{chaos.fmt(f.detected, f.t)} ({f.detect_line[:110]}); recovered "
                      f"{chaos.fmt(f.recovered, f.t)}; redone {f.redone}"
                      + "".join(f"; {n}" for n in f.notes), flush=True)
    if chaos.torch and chaos.faults:
        print(chaos.kept_summary(), flush=True)
    if chaos.t0:
        chaos.write_lines(os.path.join(chaos.out_dir, "lines.log"))
        png = chaos.args.png or os.path.join(chaos.out_dir, "timeline.png")
        try:
            legend = chaos.timeline(png)
            print(f"timeline: {png}\n{legend}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"timeline: not written: {e!r}", flush=True)
    if chaos.failures:
        print(f"\nFAIL: {len(chaos.failures)} invariant violation(s) (seed {chaos.args.seed}):",
              flush=True)
        for e in chaos.failures:
            print(f"- {e}", flush=True)
            if getattr(e, "context", ""):
                print(e.context, flush=True)
        print(f"artefacts (logs, worker records, checkpoints): {chaos.out_dir}", flush=True)
    else:
        for sub in ("records", "ckpt", "ref-ckpt", "ckptfs"):
            shutil.rmtree(os.path.join(chaos.out_dir, sub), ignore_errors=True)
        print(f"\nPASS: every invariant held over {len(chaos.faults)} faults "
              f"(seed {chaos.args.seed}); logs and timeline in {chaos.out_dir}", flush=True)


if __name__ == "__main__":
    main()

"""recovery_inplace.py --fault agent-kill|agent-stop|node-join|link-down: two agents
forming one elastic job, the second one failing, or joining.

Elastic faults (--fault agent-kill|agent-stop|node-join|link-down): two
muster agents on loopback (link-down: see below) form one job (--nnodes 1:2,
P workers each, default 2, c10d rendezvous on a port that testlib.ports
reserves, served by the first agent, --max-restarts 3). Two variants,
alternated, --runs each: in-place and restart (with checkpoints every C
steps); torchrun is not measured here (see
docs/benchmarks.md#detection-and-recovery). Rank 0 runs on the first agent,
which also writes --out. The reference is a fault-free run of one agent with
P workers and the same training flags (muster-train's weights do not depend
on the world size); both variants must end with its weights byte for byte.

  agent-kill  the second agent starts once the first has joined its own
              rendezvous, so that one generation of world size 2P forms; once
              rank 0 printed step K or later at world size 2P (the second
              agent's workers running), the bench SIGKILLs the second agent
              (its workers die with it: PR_SET_PDEATHSIG).
  agent-stop  the same with SIGSTOP (the daemon declares the node dead after
              heartbeat_timeout, 1.25 s of silence; meanwhile the stopped
              agent's workers may go on stepping); SIGCONT once rank 0 stepped
              after the recovery; the second agent may then exit by itself
              within 30 s after the first, or is killed.
  link-down   as agent-kill, but the second agent (and so its workers) runs in
              a network namespace of its own, joined to the root namespace by
              one veth pair (a private 10.98.x.0/24 no address or route here
              uses; namespace and interfaces named after the bench's pid); the
              first agent, its rendezvous and workers stay in the root
              namespace on the root end's address (both agents get
              --local-addr). The fault is `ip -n NS link set VETH down` on the
              second node's end: its processes lose every connection silently
              (no RST), and the first node's workers hang in an allreduce
              until the daemon declares the silent node dead (heartbeat_timeout,
              1.25 s). The time is stamped when `ip` returns. The cut agent
              cannot learn that the job ended: it is not waited for; once the
              first agent exited, every process inside the namespace is
              SIGKILLed by pid, then the veth and the namespace are deleted
              (also when the run fails; at exit the bench fails if one is
              still there). Needs root (and ip, nsenter): otherwise it exits
              saying so.
  node-join   the first agent trains alone; once rank 0 printed step K the
              second agent starts; the daemon admits it after its last call
              (2 s): the first agent's stderr shows event=draining and then
              event=generation ... why="admitting new nodes" (stamped as read).

Measured per run: the time from the fault (the signal; for link-down, `ip`
returning; for node-join, the admitting generation's line) to rank 0's first
step after "recovered in place at step S ... world size W)" or "resumed from
step S" (or, with no such line, the job starting over); for node-join also
from the drain's start and from the joiner's start to its admission; for
agent faults and link-down also the daemon's event=node_dead line (and, for
agent-kill and link-down, whether the second node's workers are gone when the
first agent exits: they die with their agent, or the cut agent fences them);
steps redone (the last step rank 0 printed before that line minus S);
processes restarted on the first node (its worker pids before the fault vs at
the first step after); whether they all kept their pids.
Targets for in-place: agent SIGKILL every rank stepping again <= 300 ms
(p50), steps redone <= 1, survivors' processes unchanged; agent SIGSTOP and
link down: steps redone <= 1, survivors' processes unchanged; node joining:
joiner stepping <= 500 ms after its round closes (p50), first node's
processes unchanged.
Each agent runs in its own session with TMPDIR in the run's directory; every
process whose working directory is that directory is killed at the run's end,
and the bench fails if one is still running when it exits.
"""
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import alive, log  # noqa: E402
from in_place_runs import (JOIN_RE, LABELS, MUSTER, PREFIX_RE, RESUMED_RE,  # noqa: E402
                           RUN_DIRS, STEP_RE, TOTAL_MS_RE, TRAIN, LineReader, RunFailed, base_env,
                           belongs_to, descendants, in_dir, kill_pid_and_group,
                           sweep, workers)
from testlib.netns import NetnsError, NodeLink  # noqa: E402
from testlib.ports import free_port  # noqa: E402

ELASTIC_FAULTS = ("agent-kill", "agent-stop", "node-join", "link-down")
ELASTIC_TIMEOUT = 120.0  # seconds for one elastic run, start to the first agent's exit
SECOND_AGENT_EXIT = 30.0  # seconds the second agent may take to exit after the first did
ELASTIC_TARGET_MS = {"agent-kill": 300.0, "node-join": 500.0}
TORCHRUN_ELASTIC = ("torchrun: not measured for elastic faults; "
                    "see docs/benchmarks.md#detection-and-recovery")

WORLD_RE = re.compile(r"^world size (\d+), global batch")
RECOVERED_WS_RE = re.compile(r"^recovered in place at step (\d+) of \d+ "
                             r"\(state from rank (-?\d+), world size (\d+)\)")
AGENT_JOIN_RE = re.compile(r"event=join node=")
NODE_DEAD_RE = re.compile(r"event=node_dead ")
GENERATION_RE = re.compile(r"event=generation gen=(\d+) nodes=\d+ world_size=(\d+)")  # the daemon's
ADMIT_DRAIN_RE = re.compile(r'event=draining .*why="admitting new nodes"')
ADMIT_GEN_RE = re.compile(r'event=generation gen=(\d+) nodes=\d+ world_size=(\d+).*'
                          r'why="admitting new nodes"')
FAULT_TEXT = {"agent-kill": "SIGKILL of the second agent", "agent-stop": "SIGSTOP of the second agent",
              "node-join": "a second agent joining",
              "link-down": "the second node's link set down (its own network namespace)"}
FAULT_SHORT = {"agent-kill": "SIGKILL", "agent-stop": "SIGSTOP", "link-down": "link down"}


def elastic_agent_cmd(variant, args, port, run_id, run_dir, out_file, host="127.0.0.1",
                      local_addr=None):
    """One agent of the elastic job; the rendezvous at host:port (served by the agent that
    holds host), advertising local_addr when given (link-down: each node its own address)."""
    recovery = "in-place" if variant == "in-place" else "restart"
    cmd = [MUSTER, "--nnodes", "1:2", "--nproc-per-node", str(args.nproc), "--rdzv-backend", "c10d",
           "--rdzv-endpoint", f"{host}:{port}", "--rdzv-id", run_id, "--max-restarts", "3",
           "--recovery", recovery]
    if local_addr:
        cmd += ["--local-addr", local_addr]
    cmd += ["--no-python", TRAIN, "--backend", "gloo", "--steps", str(args.steps),
            "--step-sleep-ms", str(args.step_sleep_ms), "--log-every", "1"]
    if out_file:
        cmd += ["--out", out_file]
    if variant == "restart":
        cmd += ["--checkpoint-dir", os.path.join(run_dir, "ckpt"),
                "--checkpoint-every", str(args.checkpoint_every)]
    return cmd


def elastic_fault_free(args):
    """One agent, --nproc workers, the same training flags: the reference weights."""
    run_dir = tempfile.mkdtemp(prefix="muster-bench-elastic-fault-free-")
    RUN_DIRS.append(run_dir)
    out_file = os.path.join(run_dir, "weights.bin")
    proc = None
    try:
        cmd = [MUSTER, "--nproc-per-node", str(args.nproc), "--no-python", TRAIN, "--backend", "gloo",
               "--steps", str(args.steps), "--step-sleep-ms", str(args.step_sleep_ms),
               "--log-every", "1", "--out", out_file]
        env = base_env()
        env["TMPDIR"] = run_dir
        with open(os.path.join(run_dir, "launcher.out"), "w") as out, \
                open(os.path.join(run_dir, "launcher.err"), "w") as err:
            proc = subprocess.Popen(cmd, env=env, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, start_new_session=True)
        try:
            rc = proc.wait(timeout=ELASTIC_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"no exit within {ELASTIC_TIMEOUT:.0f} s")
        if rc != 0:
            with open(os.path.join(run_dir, "launcher.err"), errors="replace") as f:
                raise RunFailed(f"exit status {rc}:\n" + "".join(f.readlines()[-15:]))
        with open(os.path.join(run_dir, "launcher.out"), errors="replace") as f:
            times = [float(m.group(1)) for m in
                     re.finditer(r"step time median ([0-9.]+) ms", f.read())]
        try:
            with open(out_file, "rb") as f:
                return {"weights": f.read(), "step_ms": times[0] if times else None}
        except OSError as e:
            raise RunFailed(f"no weights file: {e}")
    finally:
        if proc is not None:
            kill_pid_and_group(proc.pid)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        sweep(run_dir)
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            shutil.move(run_dir, os.path.join(args.keep, "fault-free"))
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


class ElasticRun:
    """One two-agent job under args.fault (see the module's doc). start() starts the first
    agent (and, for link-down, the second node's link); read() follows the first agent's
    output until it closes, starting the second agent and injecting the fault from the
    lines as they arrive; finish() checks how the job ended and returns the measurements;
    cleanup() kills whatever the run left and removes (or keeps) its directory."""

    def __init__(self, variant, args, tag):
        self.variant, self.args, self.fault, self.tag = variant, args, args.fault, tag
        self.run_dir = tempfile.mkdtemp(prefix=f"muster-bench-{self.fault}-{variant}-")
        RUN_DIRS.append(self.run_dir)
        self.out_file = os.path.join(self.run_dir, "weights.bin")
        self.err_path = os.path.join(self.run_dir, "agent1.err")
        self.port = free_port()
        self.run_id = f"bench-{os.getpid()}-{tag}{variant}".rstrip("-")
        self.env = base_env()
        self.env["TMPDIR"] = self.run_dir  # the agents' run directories, a killed one's included
        self.a1 = self.a2 = None
        self.a2_files = []
        self.err_file = None
        self.known = set()
        self.link = None  # link-down: the second node's network
        self.lines = []  # (t, "out"/"err", rank or None, text): the first agent's output
        self.zero = None
        self.fault_t = None
        self.stopped = False
        self.deadline = None
        # what the first agent's output showed
        self.a2_started = None  # t
        self.world = None  # world size of rank 0's current generation
        self.before = self.after = None  # {rank: pid} on the first node
        self.second_workers = {}  # {rank: pid} on the second node before the fault
        self.boundary = None  # (t, step the job went on from)
        self.boundary_world = None
        self.live_source = None
        self.first_after = None  # (t, step)
        self.detected = None  # t of the daemon's node_dead line (agent faults)
        self.generation_after = None  # t of the first event=generation line after the fault
        self.admit_drain = self.admit = None  # t (node-join)
        self.admit_world = None
        self.cont_t = None
        self.generations_after = 0  # event=generation lines after the fault (or the joiner's start)
        self.last_before_fault = 0
        self.last_before_recovery = 0
        self.last_step = 0
        self.steps_before = []

    def _spawn(self, cmd, stdout, stderr):
        try:
            return subprocess.Popen(cmd, env=self.env, cwd=self.run_dir, stdin=subprocess.DEVNULL,
                                    stdout=stdout, stderr=stderr, bufsize=0, start_new_session=True)
        except OSError as e:
            raise RunFailed(f"cannot start {cmd[0]}: {e}")

    def _start_second(self):
        out = open(os.path.join(self.run_dir, "agent2.out"), "w")
        err = open(os.path.join(self.run_dir, "agent2.err"), "w")
        self.a2_files.extend([out, err])
        args, link = self.args, self.link
        if link is None:
            return self._spawn(elastic_agent_cmd(self.variant, args, self.port, self.run_id,
                                                 self.run_dir, None), out, err)
        return self._spawn(link.wrap(elastic_agent_cmd(self.variant, args, self.port, self.run_id,
                                                       self.run_dir, None, self.host,
                                                       link.second_addr)), out, err)

    def start(self):
        """Sets up the second node's link (link-down) and starts the first agent; returns the
        reader of its output."""
        if self.fault == "link-down":
            self.link = NodeLink()
            try:
                self.link.up()
            except NetnsError as e:
                raise RunFailed(str(e))
        # link-down: the rendezvous on the root end's address, the second node behind the link
        self.host = self.link.first_addr if self.link else "127.0.0.1"
        self.a1 = self._spawn(elastic_agent_cmd(self.variant, self.args, self.port, self.run_id,
                                                self.run_dir, self.out_file, self.host,
                                                self.link.first_addr if self.link else None),
                              subprocess.PIPE, subprocess.PIPE)
        reader = LineReader({self.a1.stdout.fileno(): "out", self.a1.stderr.fileno(): "err"})
        self.err_file = open(self.err_path, "w")
        return reader

    def read(self, reader):
        """Follows the first agent's output until it closes (ELASTIC_TIMEOUT at most)."""
        self.deadline = time.monotonic() + ELASTIC_TIMEOUT
        while not reader.done:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise RunFailed(f"the first agent did not exit within {ELASTIC_TIMEOUT:.0f} s")
            for t, src, raw in reader.poll(min(left, 1.0)):
                if self.zero is None:
                    self.zero = t
                if src == "err":
                    self._on_agent_line(t, raw)
                else:
                    self._on_worker_line(t, src, raw)

    def _on_agent_line(self, t, raw):
        """A line of the first agent's stderr: its events and the daemon's it serves."""
        fault = self.fault
        self.err_file.write(raw + "\n")
        self.lines.append((t, "err", None, raw))
        if self.a2 is None and fault != "node-join" and AGENT_JOIN_RE.search(raw):
            # The first agent serves the rendezvous and joined it: the second
            # joins now, and the round closes at MAX (2) nodes, one generation.
            self.a2 = self._start_second()
            self.a2_started = t
        if GENERATION_RE.search(raw) and (self.fault_t is not None or
                                          (fault == "node-join" and self.a2 is not None)):
            self.generations_after += 1
        if self.fault_t is not None and fault != "node-join":
            if self.detected is None and NODE_DEAD_RE.search(raw):
                self.detected = t
            if self.generation_after is None and GENERATION_RE.search(raw):
                self.generation_after = t
        if fault == "node-join" and self.a2 is not None:
            if self.admit_drain is None and ADMIT_DRAIN_RE.search(raw):
                self.admit_drain = t
            m = ADMIT_GEN_RE.search(raw)
            if self.admit is None and m:
                self.admit, self.admit_world = t, int(m.group(2))
                if self.admit_drain is None:
                    self.admit_drain = t  # nothing was running to drain

    def _on_worker_line(self, t, src, raw):
        """A line of the first agent's stdout: its workers' output, rank 0's read."""
        args = self.args
        m = PREFIX_RE.match(raw)
        rank = int(m.group(1)) if m else None
        text = raw[m.end():] if m else raw
        self.lines.append((t, src, rank, text))
        if rank not in (None, 0):
            return
        wm = WORLD_RE.match(text)
        rm = RECOVERED_WS_RE.match(text)
        if wm:
            self.world = int(wm.group(1))
        if rm:
            self.world = int(rm.group(3))
        sm = STEP_RE.match(text)
        started_fault = (self.fault_t is not None if self.fault != "node-join"
                         else self.a2 is not None)
        if started_fault and self.boundary is None:
            rs = RESUMED_RE.match(text)
            if rm or rs:
                self.boundary = (t, int((rm or rs).group(1)))
                self.boundary_world = self.world
                self.live_source = int(rm.group(2)) if rm else None
                return
            if sm and int(sm.group(1)) <= self.last_before_recovery:
                # started over without a recovered/resumed line: from step 0
                self.boundary = (t, int(sm.group(1)) - 1)
                self.boundary_world = self.world
        if not sm:
            return
        step = int(sm.group(1))
        self.last_step = step
        if not started_fault:
            self.last_before_fault = max(self.last_before_fault, step)
            self.steps_before.append(t)
        if self.boundary is None:
            self.last_before_recovery = max(self.last_before_recovery, step)
        elif self.first_after is None:
            self.first_after = (t, step)
            self.after = workers(self.a1.pid, args.nproc)
            self.known.update(self.after.values())
            if self.fault == "agent-stop" and self.stopped:
                os.kill(self.a2.pid, signal.SIGCONT)
                self.stopped = False
                self.cont_t = time.monotonic()
        if started_fault or step < args.kill_step:
            return
        self._at_kill_step()

    def _at_kill_step(self):
        """Rank 0 reached --kill-step and the fault has not begun: node-join starts the
        second agent; the other faults hit it once its workers run at world size 2P."""
        args, fault = self.args, self.fault
        if fault == "node-join":
            self.before = workers(self.a1.pid, args.nproc)
            self.known.update(self.before.values())
            if len(self.before) != args.nproc:
                raise RunFailed(f"found the first node's workers {self.before}, "
                                f"expected {args.nproc}")
            self.a2 = self._start_second()
            self.a2_started = time.monotonic()
        elif self.a2 is not None and self.world == 2 * args.nproc:
            self.second_workers = workers(self.a2.pid, args.nproc, timeout=0.5)
            if len(self.second_workers) != args.nproc:
                return  # not yet: the next step
            self.before = workers(self.a1.pid, args.nproc)
            self.known.update(self.before.values())
            self.known.update(self.second_workers.values())
            if len(self.before) != args.nproc:
                raise RunFailed(f"found the first node's workers {self.before}, "
                                f"expected {args.nproc}")
            if fault == "link-down":
                try:
                    self.link.cut()
                except NetnsError as e:
                    raise RunFailed(str(e))
                self.fault_t = time.monotonic()  # `ip` returns right after the link is down
            else:
                self.fault_t = time.monotonic()
                if fault == "agent-kill":
                    os.kill(self.a2.pid, signal.SIGKILL)
                else:
                    os.kill(self.a2.pid, signal.SIGSTOP)
                    self.stopped = True

    def finish(self, reference_weights):
        """Waits for the agents, checks how the job ended and returns the measurements."""
        args, fault, a1, a2 = self.args, self.fault, self.a1, self.a2
        try:
            rc = a1.wait(timeout=max(1.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RunFailed("the first agent's output closed but it did not exit")
        a2_rc = None
        if a2 is not None:
            if self.stopped:  # never recovered: let it go on so that it can be reaped
                os.kill(a2.pid, signal.SIGCONT)
                self.stopped = False
            try:
                # Cut off, the second agent cannot learn that the job ended: not waited for.
                a2_rc = a2.wait(timeout=0 if fault == "link-down" else SECOND_AGENT_EXIT)
            except subprocess.TimeoutExpired:
                a2_rc = "still running (killed)"
        if rc != 0:
            raise RunFailed(f"the first agent exited with status {rc}")
        if fault == "node-join" and a2_rc != 0:
            raise RunFailed(f"the second agent exited with status {a2_rc}")
        if self.last_step != args.steps:
            raise RunFailed(f"rank 0's last step was {self.last_step}, not {args.steps}")
        try:
            with open(self.out_file, "rb") as f:
                weights = f.read()
        except OSError as e:
            raise RunFailed(f"no weights file: {e}")
        if fault == "node-join":
            if a2 is None:
                raise RunFailed(f"rank 0 never printed step {args.kill_step}")
            if self.admit is None:
                raise RunFailed("no generation 'admitting new nodes' before the end "
                                "(raise --steps)")
        elif self.fault_t is None:
            raise RunFailed(f"no step >= {args.kill_step} at world size {2 * args.nproc} "
                            f"with the second node's workers running")
        if self.boundary is None or self.first_after is None:
            raise RunFailed("no step after a recovered/resumed line")
        want_world = 2 * args.nproc if fault == "node-join" else args.nproc
        if self.boundary_world != want_world:
            raise RunFailed(f"the job went on at world size {self.boundary_world}, not {want_world}")
        err_text = "\n".join(x for _, s, _, x in self.lines if s == "err")
        total = [float(x) for x in TOTAL_MS_RE.findall(err_text)]
        joined = [int(x) for x in JOIN_RE.findall(err_text)]
        start = self.admit if fault == "node-join" else self.fault_t
        gaps = [b - a for a, b in zip(self.steps_before, self.steps_before[1:])]
        before, after, first_after = self.before, self.after, self.first_after
        result = {
            "step_ms": statistics.median(gaps) * 1000 if gaps else None,
            "ms": (first_after[0] - start) * 1000,
            "redone": self.last_before_recovery - self.boundary[1],
            "last_before_fault": self.last_before_fault,
            "last_before_recovery": self.last_before_recovery,
            "went_on_from": self.boundary[1],
            "first_step_after": first_after[1],
            "live_source": self.live_source,
            "restarted": len(set(after.values()) - set(before.values())),
            "survivors_kept": len(after) == args.nproc and set(after.values()) == set(before.values()),
            "agent_total_ms": total[0] if total else None,
            "agent_restarted": joined[0] if joined else None,
            "weights_equal": weights == reference_weights,
            "second_rc": a2_rc,
            "generations_after": self.generations_after,
        }
        if fault == "node-join":
            result.update({
                "from_drain_ms": (first_after[0] - self.admit_drain) * 1000,
                "admitted_after_ms": (self.admit - self.a2_started) * 1000,
                "admit_world": self.admit_world,
            })
        else:
            fault_t = self.fault_t
            result.update({
                "detected_ms": None if self.detected is None else (self.detected - fault_t) * 1000,
                "generation_ms": (None if self.generation_after is None
                                  else (self.generation_after - fault_t) * 1000),
                # agent-kill: they die with their agent (PR_SET_PDEATHSIG); link-down: the cut
                # agent fences them by itself; by the first agent's exit here
                "second_workers_gone": (None if fault == "agent-stop" else
                                        not any(alive(p) for p in self.second_workers.values())),
                "cont_after_ms": None if self.cont_t is None else (self.cont_t - fault_t) * 1000,
            })
        if not result["weights_equal"]:
            raise RunFailed(f"final weights differ from the fault-free run's "
                            f"({len(weights)} vs {len(reference_weights)} bytes)")
        return result

    def failure(self, e):
        """`e` with the tails of both agents' output, for the report."""
        lines = self.lines
        tail = "\n".join(f"    [rank{r}]: {x}" if r is not None else f"    {x}"
                         for _, s, r, x in [l for l in lines if l[1] == "out"][-15:])
        err_tail = "\n".join(f"    {x}" for _, s, _, x in [l for l in lines if l[1] == "err"][-15:])
        tail2 = ""
        for name in ("agent2.out", "agent2.err"):
            try:
                with open(os.path.join(self.run_dir, name), errors="replace") as f:
                    tail2 += f"  {name} tail:\n" + "".join("    " + x for x in f.readlines()[-8:])
            except OSError:
                pass
        return RunFailed(f"{LABELS.get(self.variant, self.variant)}: {e}\n"
                         f"  first agent's stdout tail:\n{tail}\n"
                         f"  first agent's stderr tail:\n{err_tail}\n{tail2}")

    def cleanup(self):
        """Kills what the run started (by pid, and whatever still runs in its directory),
        tears the link down, and removes the run's directory (or keeps it under --keep)."""
        a1, a2, run_dir = self.a1, self.a2, self.run_dir
        for p in (a2, a1):
            if p is not None:
                try:
                    os.kill(p.pid, signal.SIGCONT)  # a stopped agent cannot be reaped otherwise
                except (ProcessLookupError, PermissionError):
                    pass
        for p in (a2, a1):
            # Only an agent not yet reaped is signalled by pid (a reaped one's pid may be
            # another process's by now); what it left behind runs in run_dir: swept.
            if p is not None and p.poll() is None:
                doomed = descendants(p.pid)
                kill_pid_and_group(p.pid)
                for pid in doomed:
                    if in_dir(pid, run_dir):
                        kill_pid_and_group(pid)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        for pid in self.known:
            if in_dir(pid, run_dir) or belongs_to(pid, run_dir):
                kill_pid_and_group(pid)
        sweep(run_dir)
        if self.link is not None:
            # the lost node: whatever still runs inside its namespace, the veth, the namespace
            for problem in self.link.teardown():
                log(f"warning: {self.fault} cleanup: {problem}")
        if a1 is not None:
            for s in (a1.stdout, a1.stderr):
                if s:
                    s.close()
        for f in self.a2_files + ([self.err_file] if self.err_file else []):
            f.close()
        if self.args.keep:
            # the first agent's output with arrival times relative to the fault
            base = self.fault_t if self.fault_t is not None else (self.zero or 0.0)
            with open(os.path.join(run_dir, "agent1.txt"), "w") as f:
                for t, s, r, x in self.lines:
                    f.write(f"{(t - base) * 1000:+10.1f} ms {s} " +
                            (f"[rank{r}]: " if r is not None else "") + x + "\n")
            os.makedirs(self.args.keep, exist_ok=True)
            shutil.move(run_dir, os.path.join(self.args.keep, f"{self.tag}{self.variant}"))
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


def elastic_run(variant, args, reference_weights, tag=""):
    """One two-agent job under args.fault (see the module's doc). Returns the measurements;
    RunFailed (with both agents' output tails) when the job or a check failed."""
    run = ElasticRun(variant, args, tag)
    try:
        run.read(run.start())
        return run.finish(reference_weights)
    except RunFailed as e:
        raise run.failure(e) from None
    finally:
        run.cleanup()

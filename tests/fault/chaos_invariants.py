"""The invariants a chaos run checks after every fault (chaos_checks.py holds the
checks themselves), and how a violation is recorded with its evidence.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_checks  # noqa: E402
from chaos_checks import InvariantError  # noqa: E402


class Invariants:
    """Checks the invariants and records a violation with its evidence.
    A part of chaos.Chaos: its methods share the run's state on self."""

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


"""What a chaos run reads from its logs and records: steps, generations, agent lines,
the processes that must stay up, the daemon's status.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_checks  # noqa: E402
import chaos_cluster as cluster  # noqa: E402
import chaos_torch  # noqa: E402
from chaos_checks import InvariantError  # noqa: E402
from chaos_common import (GEN_RE, MUSTER, REJOIN_RE, RESTORE_TIMEOUT, RESUMED_RE, RUN_ID,
                          SILENT_RE, STEP_RE)  # noqa: E402


class Observer:
    """Folds the run's log lines and worker records into steps and generations.
    A part of chaos.Chaos: its methods share the run's state on self."""

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


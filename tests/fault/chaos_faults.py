"""A chaos run's faults on processes and the network (worker_kill, worker_hang,
agent_kill, master_kill, daemon_kill, link_down, partition, flood): injected, detected,
recovered from and undone.
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_cluster as cluster  # noqa: E402
import chaos_replicas  # noqa: E402
import chaos_torch  # noqa: E402
from chaos_checks import InvariantError  # noqa: E402
from chaos_common import (AUTO_HANG_EXTRA_S, FLOOD, Fault, RECOVERY_TIMEOUT,  # noqa: E402
                          REPLICA_KINDS)


class Faults:
    """Injects, detects, recovers from and undoes the process and network faults.
    A part of chaos.Chaos: its methods share the run's state on self."""

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
            bound = RECOVERY_TIMEOUT
            if kind == "worker_hang" and self.args.hang_timeout == "auto":
                bound += AUTO_HANG_EXTRA_S
            recovered_gen, _ = self.wait_recovered(fault, bound)
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


"""The replicated rendezvous' faults of a chaos run (leader_kill, leader_cut, and a
standby's daemon_kill): injected, recovered from, and checked for restarted workers.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_checks  # noqa: E402
import chaos_cluster as cluster  # noqa: E402
from chaos_checks import InvariantError  # noqa: E402
from chaos_common import (FAILOVER_TIMEOUT, RECOVERY_TIMEOUT, REPLICA_KINDS, RESTORE_TIMEOUT)  # noqa: E402


class ReplicaFaults:
    """Injects and recovers from the replicated rendezvous' faults.
    A part of chaos.Chaos: its methods share the run's state on self."""

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


"""Agents of a replicated rendezvous (PROTOCOL.md, "Replicas"): 3 musterd
replicas on a 3-member etcd, agents given every replica in --rdzv-endpoint.

- Losing one etcd member changes nothing; kill -9 of the leader restarts no
  worker (every agent follows the new leader, which rebuilds the run from
  their reports), and a node death afterwards is handled by the new leader.
- Every replica down: the agents fence fence_timeout after the leader's close.
"""
import json
import os
import re
import shutil
import signal
import time

from elastic_harness import agent_args, agent_of_rank, check_generations, dumps, wait_generation
from harness import check, pid_alive, tempdir, test, wait_for
from replica_harness import LoggedAgent, Setup, leader_among, one_leader


class Job:
    """`agents` agents x 2 gen_dump.py workers (--nnodes 2:3) on the replicas of `setup`."""

    def __init__(self, setup, agents=3, conf=""):
        self.setup = setup
        self.out = tempdir()
        endpoints = ",".join(r.address for r in setup.replicas)
        self.agents = [LoggedAgent(agent_args(endpoints, "127.0.0.1", self.out, conf=conf),
                                   setup.dir, str(i)) for i in range(agents)]
        self.gen = wait_generation(self.out, 2 * agents, timeout=20)
        self.pids = sorted(r["pid"] for r in dumps(self.out)[self.gen].values())

    def logs(self):
        return [a.text() for a in self.agents]

    def close(self):
        for a in self.agents:
            a.close()
        shutil.rmtree(self.out, ignore_errors=True)


@test
def a_killed_leader_restarts_no_worker_and_its_successor_handles_a_node_death():
    s = Setup(etcd_members=3, replicas=3)
    job = None
    try:
        leader = one_leader(s.replicas, timeout=15)
        job = Job(s)
        gen, pids = job.gen, job.pids

        # One etcd member of three dies (a raft follower): nothing visible.
        s.etcd.kill((s.etcd.raft_leader() + 1) % 3)
        time.sleep(2.5)
        check(leader_among(s.replicas) is leader, "the leader changed with one etcd member gone",
              *[r.text() for r in s.replicas])
        check(sorted(dumps(job.out)) == [gen] and all(pid_alive(p) for p in pids),
              "losing an etcd member restarted workers", *job.logs())

        killed_at = time.monotonic()
        os.kill(leader.proc.pid, signal.SIGKILL)
        leader.proc.wait()
        survivors = [r for r in s.replicas if r is not leader]
        check(wait_for(lambda: leader_among(survivors) is not None, 6),
              "no standby took the lead", *[r.text() for r in survivors])
        new = leader_among(survivors)
        want = f"event=rdzv_leader endpoint={new.address}"
        check(wait_for(lambda: all(want in text for text in job.logs()), 6),
              f"not every agent followed the new leader {new.address}", new.text(), *job.logs())
        followed = time.monotonic() - killed_at
        print(f"  every agent was on the new leader {followed:.2f} s after the leader's SIGKILL")
        # Beyond failover_timeout (3.5 s) after the kill: no agent fenced.
        time.sleep(max(0.0, killed_at + 4.0 - time.monotonic()))
        check(sorted(dumps(job.out)) == [gen], f"new generations: {sorted(dumps(job.out))}",
              new.text(), *job.logs())
        check(all(pid_alive(p) for p in pids), "a worker was restarted or killed", *job.logs())
        check("event=rebuilt" in new.text(), "the new leader did not rebuild the run", new.text())
        check(all("event=fence" not in text for text in job.logs()), "an agent fenced",
              *job.logs())

        # It started from the run's record in etcd, written by the old leader.
        check(re.search(r"event=replica_leader epoch=\d+ .* runs=1\b", new.text()),
              "the new leader did not read the run's record", new.text())

        # A node dies: the new leader forms the next generation without it,
        # and its record in etcd says so.
        victim = agent_of_rank(job.agents, job.out, gen, 4)
        victim.proc.send_signal(signal.SIGKILL)
        new_gen = wait_generation(job.out, 4, after=gen, timeout=15)
        gens = check_generations(job.out)
        check(sorted(gens[new_gen]) == [0, 1, 2, 3], "survivors hold ranks 0..3")
        check(f"gen={new_gen}" in new.text(), f"generation {new_gen} is not the new leader's",
              new.text())

        def record():
            value = s.etcd.get("/muster-test/runs/job")
            return json.loads(value) if value else {}

        # Generations count from 1 at the daemon; the workers' from 0.
        check(wait_for(lambda: record().get("generation") == new_gen + 1, 3),
              f"the run's record in etcd is {record()}", new.text())
        check(record() | {"generation": 0} == {"run_id": "job", "generation": 0,
                                                "restart_count": 0, "max_restarts": 0,
                                                "min_nodes": 2, "max_nodes": 3, "ended": False},
              f"the run's record in etcd is {record()}")
    finally:
        if job:
            job.close()
        s.close()


@test
def agents_fence_when_every_replica_is_down():
    s = Setup(replicas=2)
    job = None
    try:
        one_leader(s.replicas)
        job = Job(s, agents=2)
        killed_at = time.monotonic()
        for r in s.replicas:
            os.kill(r.proc.pid, signal.SIGKILL)
            r.proc.wait()
        # The leader's close is the last answer: a refused connect proves
        # nothing of a replica elsewhere. The workers stay up to fence_timeout
        # after it...
        time.sleep(0.6)
        check(all(pid_alive(p) for p in job.pids),
              "workers were stopped inside fence_timeout", *job.logs())
        # ...and not much beyond it.
        check(wait_for(lambda: not any(pid_alive(p) for p in job.pids), 5),
              "workers outlived fence_timeout with every replica down", *job.logs())
        took = time.monotonic() - killed_at
        print(f"  workers fenced {took:.2f} s after every replica died")
        check(took < 2.5, f"fenced only after {took:.2f} s", *job.logs())
        check(all("no word from any replica of the rendezvous" in text
                  for text in job.logs()), "the fence did not say why", *job.logs())
    finally:
        if job:
            job.close()
        s.close()


if __name__ == "__main__":
    from harness import run_tests
    run_tests()

"""musterd replicas electing a leader through a real etcd (etcd_cluster.py):
one leader serves, standbys refuse agents naming it, a killed or stopped
leader is replaced, a leader cut off from etcd steps down before its lease
can expire, and losing one etcd member of three changes nothing.

Replicas are replica_harness.py's: the tests read their event= lines and ask
them with `muster status`.
"""
import json
import os
import signal
import time

from harness import check, free_port, kill_tree, run, start, test, wait_for
from replica_harness import MUSTER, MUSTERD, Setup, leader_among, one_leader

@test
def replicas_elect_one_leader_and_the_standbys_name_it():
    s = Setup()
    try:
        leader = one_leader(s.replicas)
        epoch = leader.epochs_led()[-1]
        time.sleep(0.5)  # a second leader would have logged by now
        check(sum(1 for r in s.replicas if r.epochs_led()) == 1, "more than one replica led",
              *[r.text() for r in s.replicas])
        standbys = ", ".join(sorted(r.address for r in s.replicas if r is not leader))
        summary = f"leader {leader.address} (epoch {epoch}), standbys: {standbys}\n"
        # The registry of replicas is read back every second.
        check(wait_for(lambda: summary in leader.status()[1], 5),
              "the leader's status does not name the leader, its epoch and the standbys",
              *leader.status())
        code, out, err = leader.status()
        check(code == 0 and "no runs" in out, f"the leader's status exited {code}", out, err)
        for r in s.replicas:
            if r is leader:
                continue
            # Any replica answers: a standby names the leader, and muster
            # status asks it.
            code, out, err = r.status()
            check(code == 0 and summary in out, f"status against standby {r.address}", out, err)
            want = f"{r.address} is a standby; asking the leader {leader.address} (epoch {epoch})"
            check(want in err, f"standby {r.address} did not name the leader", out, err)
        # Every replica given, as agents give them, the first one down.
        dead = f"127.0.0.1:{free_port()}"
        code, out, err = run([MUSTER, "status", "--rdzv-endpoint",
                              ",".join([dead] + [r.address for r in s.replicas])], timeout=20)
        check(code == 0 and summary in out, "status with a list of replicas", out, err)
        check(f"cannot connect to {dead}" in err, "the replica that is down went unmentioned", err)
    finally:
        s.close()


@test
def a_killed_leader_is_replaced_within_its_lease_by_a_higher_epoch():
    s = Setup()
    try:
        old = one_leader(s.replicas)
        old_epoch = old.epochs_led()[-1]
        killed_at = time.monotonic()
        os.kill(old.proc.pid, signal.SIGKILL)
        old.proc.wait()
        survivors = [r for r in s.replicas if r is not old]
        check(wait_for(lambda: leader_among(survivors) is not None, 6),
              "no standby took the lead within 6 s of the leader's SIGKILL",
              *[r.text() for r in survivors])
        took = time.monotonic() - killed_at
        new = leader_among(survivors)
        check(new.epochs_led()[-1] > old_epoch,
              f"the new epoch {new.epochs_led()[-1]} is not above {old_epoch}", new.text())
        print(f"  a standby led {took:.2f} s after the leader's SIGKILL (lease TTL 2 s)")
        # etcd's minimum lease is 2 s and it expires leases in steps of 0.5 s.
        check(took < 4, f"the standby took {took:.2f} s to lead", new.text())
    finally:
        s.close()


@test
def a_leader_stopped_by_sigterm_gives_its_lease_back_and_a_standby_leads_a_lead_margin_later():
    s = Setup(replicas=2)
    try:
        old = one_leader(s.replicas)
        other = next(r for r in s.replicas if r is not old)
        stopped_at = time.monotonic()
        os.kill(old.proc.pid, signal.SIGTERM)
        check(wait_for(lambda: other.epochs_led(), 5), "the standby did not lead", other.text())
        took = time.monotonic() - stopped_at
        print(f"  the standby led {took:.2f} s after the leader's SIGTERM")
        # Under the lease's 2 s: it was given back, not left to expire; and
        # not before the lead margin (0.6 s) after the leader stopped serving.
        check(took < 1.8, f"{took:.2f} s: the lease was not given back", old.text(), other.text())
        check(took >= 0.6, f"{took:.2f} s: the standby led within the lead margin", old.text(),
              other.text())
    finally:
        s.close()


@test
def a_leader_cut_off_from_etcd_steps_down_before_its_lease_can_expire():
    s = Setup(replicas=1)
    try:
        leader = one_leader(s.replicas)
        s.etcd.pause(0)  # etcd stops answering: nobody can renew or win
        paused_at = time.monotonic()
        # The server stops serving at its deadline by itself (the election
        # thread may still be waiting on etcd then), and says why.
        stopped = "the lease ran out before it was renewed"
        check(wait_for(lambda: stopped in leader.text() or
                       "event=replica_step_down" in leader.text(), 4),
              "the leader did not step down without etcd", leader.text())
        took = time.monotonic() - paused_at
        print(f"  stopped serving {took:.2f} s after etcd stopped answering")
        # The last renewal was at most renew_interval (0.5 s) before the
        # pause; the leader must stop before that renewal + TTL 2 s.
        check(took < 2.0, f"stepped down only after {took:.2f} s", leader.text())
        code, out, err = leader.status()
        check("no leader is known" in out + err, "a stepped-down replica still served", out, err)
        s.etcd.resume(0)
        # It serves again: by a new lease and campaign, or under the same
        # lease when the renewal it sent before its deadline is answered as
        # etcd resumes.
        check(wait_for(lambda: "no runs" in "".join(leader.status()[1:]), 10),
              "the replica did not serve again once etcd came back", leader.text())
    finally:
        s.close()


@test
def losing_one_etcd_member_of_three_changes_no_leader():
    # A follower of etcd's raft: the others answer at once. (Killing etcd's
    # raft leader stops every write for its election, about 2 s, as long as
    # the lease: the musterd leader may then step down and a replica lead
    # again with a new epoch, a failover like a musterd leader's loss.)
    s = Setup(etcd_members=3, replicas=2)
    try:
        leader = one_leader(s.replicas, timeout=15)
        epoch = leader.epochs_led()[-1]
        raft_leader = s.etcd.raft_leader()
        check(raft_leader is not None, "no etcd member says it leads etcd's raft")
        s.etcd.kill((raft_leader + 1) % 3)
        time.sleep(3)  # more than a lease TTL
        check(leader_among(s.replicas) is leader and leader.epochs_led()[-1] == epoch,
              "the leader changed when one etcd member of three died",
              *[r.text() for r in s.replicas])
        check(all("event=replica_step_down" not in r.text() for r in s.replicas),
              "a replica stepped down", *[r.text() for r in s.replicas])
    finally:
        s.close()


@test
def a_replica_runs_from_its_config_file():
    # What musterd.service does: every replica setting in the config file.
    s = Setup(replicas=0)
    try:
        port = free_port()
        config = os.path.join(s.dir, "musterd.json")
        with open(config, "w") as f:
            f.write("// a replica\n" + json.dumps({
                "host": "127.0.0.1", "port": port, "etcd": "http://" + s.etcd.endpoints(),
                "advertise": f"127.0.0.1:{port}", "etcd_prefix": "/muster-config"}))
        log_path = os.path.join(s.dir, "musterd-config.log")
        with open(log_path, "w") as log:
            proc = start([MUSTERD, "--config", config], stdout=log, stderr=log)
        try:
            def text():
                with open(log_path) as f:
                    return f.read()
            check(wait_for(lambda: f"advertise=127.0.0.1:{port}" in text() and
                           "event=replica_leader" in text(), 10),
                  "the replica configured by file did not lead", text())
            check("key=/muster-config/musterd/leader" in text(), "the prefix was not read", text())
        finally:
            kill_tree(proc.pid)
            proc.wait()
    finally:
        s.close()


@test
def bad_replica_flags_are_refused_naming_the_value():
    for args, want in [
        (["--advertise", "127.0.0.1:1"], "--advertise '127.0.0.1:1' needs --etcd"),
        (["--etcd", "ftp://127.0.0.1:2379", "--advertise", "127.0.0.1:1"],
         "must be [http://|https://]HOST:PORT"),
        (["--etcd", "127.0.0.1", "--advertise", "127.0.0.1:1"], "needs a port"),
        (["--etcd", "127.0.0.1:2379"], "--advertise '' must be the HOST:PORT"),
        (["--etcd", "127.0.0.1:2379", "--advertise", "127.0.0.1:1", "--etcd-prefix", "x"],
         "--etcd-prefix 'x' must start with '/'"),
    ]:
        code, out, err = run([MUSTERD, "--port", "0"] + args, timeout=10)
        check(code == 2 and want in err, f"{args}: exit {code}", out, err)


if __name__ == "__main__":
    from harness import run_tests
    run_tests()

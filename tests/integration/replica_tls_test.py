"""musterd replicas over TLS to etcd (--etcd https://..., --etcd-cacert,
--etcd-cert, --etcd-key): a real etcd with a certificate of a throwaway CA
that asks for client certificates (--client-cert-auth).

- Replicas with the CA and a client certificate elect a leader, and a
  standby leads when it dies.
- A replica that trusts another CA, or brings no client certificate, never
  leads and says why in its log.
- Bad TLS flags are refused at start, naming the flag and the file.
- Replicas that serve agents over mutual TLS: agents given every replica
  follow a standby's redirect to the leader, and a new leader after the
  leader's SIGKILL, verifying each one's certificate, with no worker
  restarted; `muster status` reads the leader over TLS too.
"""
import os
import shutil
import signal
import time

from elastic_harness import agent_args, dumps, wait_generation
from harness import MUSTER, check, pid_alive, run, tempdir, test, wait_for
from replica_harness import MUSTERD, LoggedAgent, Setup, leader_among, one_leader


def full_tls(s):
    """The flags of a replica that etcd accepts: the CA and a client certificate."""
    return ("--etcd-cacert", s.certs.ca, "--etcd-cert", s.certs.client_cert,
            "--etcd-key", s.certs.client_key)


@test
def replicas_with_the_ca_and_a_client_certificate_elect_a_leader_and_fail_over():
    s = Setup(replicas=0, tls=True)
    try:
        first, second = s.add_replica(*full_tls(s)), s.add_replica(*full_tls(s))
        leader = one_leader([first, second], timeout=15)
        check(s.etcd.get("/muster-test/musterd/leader") == leader.address,
              "etcd's election key does not name the leader", leader.text())
        standby = second if leader is first else first
        check(wait_for(lambda: f"event=replica_view leader={leader.address}" in standby.text(), 5),
              "the standby never read the leader over TLS", standby.text())
        os.kill(leader.proc.pid, signal.SIGKILL)
        leader.proc.wait()
        check(wait_for(lambda: leader_among([standby]) is standby, 8),
              "the standby did not take the lead over TLS", standby.text())
        check("event=etcd_failed" not in standby.text(), "an etcd call failed", standby.text())
    finally:
        s.close()


@test
def a_replica_that_trusts_another_ca_or_brings_no_client_certificate_never_leads():
    s = Setup(replicas=0, tls=True)
    try:
        wrong_ca = s.add_replica("--etcd-cacert", s.certs.other_ca, "--etcd-cert",
                                 s.certs.client_cert, "--etcd-key", s.certs.client_key)
        no_cert = s.add_replica("--etcd-cacert", s.certs.ca)
        check(wait_for(lambda: "event=etcd_failed" in wrong_ca.text(), 5),
              "the replica trusting another CA logged no failed etcd call", wrong_ca.text())
        check("certificate verify failed" in wrong_ca.text(),
              "the failure does not say the certificate did not verify", wrong_ca.text())
        check(wait_for(lambda: "event=etcd_failed" in no_cert.text(), 5),
              "the replica without a client certificate logged no failed etcd call",
              no_cert.text())
        check(leader_among([wrong_ca, no_cert]) is None, "a replica led without TLS trust",
              wrong_ca.text(), no_cert.text())
        check(s.etcd.get("/muster-test/musterd/leader") is None,
              "an election key was written", wrong_ca.text(), no_cert.text())
    finally:
        s.close()


@test
def bad_tls_flags_are_refused_at_start_naming_the_flag_and_the_file():
    d = tempdir()
    try:
        not_pem = os.path.join(d, "not.pem")
        with open(not_pem, "w") as f:
            f.write("not a certificate\n")
        missing = os.path.join(d, "missing.pem")
        https = ["--etcd", "https://127.0.0.1:2379", "--advertise", "127.0.0.1:1"]
        for args, want in [
            (https + ["--etcd-cert", not_pem], f"--etcd-cert '{not_pem}' needs --etcd-key"),
            (https + ["--etcd-key", not_pem], f"--etcd-key '{not_pem}' needs --etcd-cert"),
            (https + ["--etcd-cacert", missing], f"--etcd-cacert '{missing}': cannot read it"),
            (https + ["--etcd-cacert", not_pem], f"--etcd-cacert '{not_pem}': not a PEM"),
            (["--etcd", "127.0.0.1:2379", "--advertise", "127.0.0.1:1", "--etcd-cacert", not_pem],
             "need an https:// endpoint in --etcd"),
            (["--etcd-cacert", not_pem], "need --etcd"),
            # The agents' side of TLS: the rendezvous port's own files.
            (["--tls-cert", not_pem], f"--tls-cert '{not_pem}' needs --tls-key"),
            (["--tls-cert", missing, "--tls-key", not_pem], f"--tls-cert '{missing}': cannot read it"),
            (["--tls-cert", not_pem, "--tls-key", not_pem], f"--tls-cert '{not_pem}': not a PEM"),
            (["--tls-client-ca", not_pem], f"--tls-client-ca '{not_pem}' needs --tls-cert"),
        ]:
            code, out, err = run([MUSTERD, "--port", "0"] + args, timeout=10)
            check(code == 2 and want in err, f"{args}: exit {code}, wanted '{want}'", out, err)
        agent = [MUSTER, "--nnodes", "1:2", "--rdzv-backend", "muster", "--rdzv-endpoint",
                 "127.0.0.1:1", "--no-python", "--rdzv-conf"]
        for args, want in [
            (agent + [f"tls_ca={missing}", "true"], f"--rdzv-conf tls_ca '{missing}': cannot read it"),
            (agent + [f"tls_ca={not_pem}", "true"], f"--rdzv-conf tls_ca '{not_pem}': not a PEM"),
            (agent + [f"tls_key={not_pem}", "true"], f"--rdzv-conf tls_key '{not_pem}' needs"),
            ([MUSTER, "status", "--rdzv-conf", f"tls_cert={not_pem}"],
             f"--rdzv-conf tls_cert '{not_pem}' needs --rdzv-conf tls_key"),
        ]:
            code, out, err = run(args, timeout=10)
            check(code == 2 and want in err, f"{args}: exit {code}, wanted '{want}'", out, err)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def serving_tls(s):
    """The flags of a replica that serves agents over mutual TLS: etcd's server
    certificate (it names 127.0.0.1) and the CA every agent's chains to."""
    return ("--tls-cert", s.certs.server_cert, "--tls-key", s.certs.server_key,
            "--tls-client-ca", s.certs.ca)


@test
def agents_follow_replicas_over_mutual_tls_through_a_failover():
    s = Setup(replicas=0, tls=True)
    agents, out = [], tempdir()
    try:
        replicas = [s.add_replica(*full_tls(s), *serving_tls(s)) for _ in range(2)]
        leader = one_leader(replicas, timeout=15)
        standby = replicas[1] if leader is replicas[0] else replicas[0]
        conf = f"tls_ca={s.certs.ca},tls_cert={s.certs.client_cert},tls_key={s.certs.client_key}"
        # The standby first: each agent is redirected to the leader it names.
        endpoints = f"{standby.address},{leader.address}"
        agents = [LoggedAgent(agent_args(endpoints, "127.0.0.1", out, conf=conf), s.dir, str(i))
                  for i in range(2)]
        gen = wait_generation(out, 4, timeout=20)
        pids = sorted(r["pid"] for r in dumps(out)[gen].values())
        code, status, err = run([MUSTER, "status", "--rdzv-endpoint", endpoints, "--rdzv-conf",
                                 conf, "--json"], timeout=20)
        check(code == 0 and '"run_id":"job"' in status.replace(" ", ""),
              f"muster status over TLS: exit {code}", status, err)

        os.kill(leader.proc.pid, signal.SIGKILL)
        leader.proc.wait()
        check(wait_for(lambda: leader_among([standby]) is standby, 8),
              "the standby did not take the lead", standby.text())
        want = f"event=rdzv_leader endpoint={standby.address}"
        check(wait_for(lambda: all(want in a.text() for a in agents), 8),
              "not every agent followed the new leader over TLS", standby.text(),
              *[a.text() for a in agents])
        time.sleep(1.0)
        check(sorted(dumps(out)) == [gen] and all(pid_alive(p) for p in pids),
              "the failover restarted workers", *[a.text() for a in agents])
        check("event=tls_refused" not in standby.text(), "a replica refused TLS", standby.text())
    finally:
        for a in agents:
            a.close()
        shutil.rmtree(out, ignore_errors=True)
        s.close()


if __name__ == "__main__":
    from harness import run_tests
    run_tests()

"""musterd replicas over TLS to etcd (--etcd https://..., --etcd-cacert,
--etcd-cert, --etcd-key): a real etcd with a certificate of a throwaway CA
that asks for client certificates (--client-cert-auth).

- Replicas with the CA and a client certificate elect a leader, and a
  standby leads when it dies.
- A replica that trusts another CA, or brings no client certificate, never
  leads and says why in its log.
- Bad TLS flags are refused at start, naming the flag and the file.
"""
import os
import shutil
import signal

from harness import check, run, tempdir, test, wait_for
from replica_harness import MUSTERD, Setup, leader_among, one_leader


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
        ]:
            code, out, err = run([MUSTERD, "--port", "0"] + args, timeout=10)
            check(code == 2 and want in err, f"{args}: exit {code}, wanted '{want}'", out, err)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    from harness import run_tests
    run_tests()

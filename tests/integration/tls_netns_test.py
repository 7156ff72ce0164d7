"""TLS between agents and musterd, across hosts in network namespaces.

musterd runs in the daemon namespace; agents on h1 and h2 run a job over
mutual TLS with a shared token; h3 plays the outsider. Certificates are made
with openssl by the five commands docs/operations.md gives (plus a second CA
and a certificate that names another host).

Checked:
  - while the job runs, an agent on h3 without a client certificate, one with
    a certificate from another CA, and one speaking plain text are each
    refused: the agent exits non-zero saying why, musterd logs one
    tls_refused line naming h3's address, and the job goes on to succeed;
  - an agent whose daemon's certificate does not name the address it dialled
    refuses that daemon (hostname/IP verification);
  - a capture on h1's veth (a raw packet socket in the root namespace) holds
    the token when the agent talks plain TCP, and neither the token nor the
    Hello's agent id when it talks TLS, while it holds a TLS handshake;
  - on loopback, without a daemon: the agent that serves the rendezvous by
    the c10d rule serves mutual TLS with its own certificate (a peer with
    the CA but no certificate is refused in the handshake, one tls_refused
    line in the serving agent's log, and the job goes on), and an agent
    told to serve (is_host=1) with only tls_ca stops saying why.

The namespace cases need root (namespaces, veths, a bridge, a packet
socket); otherwise they are skipped.
"""
import os
import re
import secrets
import shutil
import socket
import subprocess
import threading
import time

from elastic_harness import MUSTERD, agent_args, dumps, wait_generation
from harness import (Skip, check, free_port, pid_alive, run, run_tests, start, tempdir, test,
                     wait_for)
from netns_harness import DAEMON_ADDR, Hosts, host_addr, remove_stale_hosts
from testlib.ports import bound_port

ETH_P_ALL = 0x0003


def need_root():
    if os.geteuid() != 0:
        raise Skip("needs root to create network namespaces, veths, a bridge and a packet "
                   f"socket (running as uid {os.geteuid()})")


def openssl(*args, cwd):
    res = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=30)
    check(res.returncode == 0, f"openssl {' '.join(args)} failed", res.stderr)


def issue(d, name, ca, cn, ext):
    """NAME.key and NAME.pem: a P-256 key and a certificate for `cn` signed by CA."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=d)
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write(ext)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-days", "825", "-out", f"{name}.pem", "-extfile", f"{name}.ext",
            cwd=d)


def make_certs():
    """A CA; musterd's certificate for the daemon's address; an agent's; a
    second CA with an agent certificate of its own; a daemon certificate that
    names only another host. Returns the directory."""
    d = tempdir()
    for ca in ("ca", "other_ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "3650", "-subj",
                f"/CN=muster {ca}", cwd=d)
    issue(d, "musterd", "ca", "musterd",
          f"subjectAltName=DNS:musterd.test,IP:{DAEMON_ADDR}\nextendedKeyUsage=serverAuth\n")
    issue(d, "elsewhere", "ca", "elsewhere",
          "subjectAltName=DNS:elsewhere.test,IP:10.213.99.1\nextendedKeyUsage=serverAuth\n")
    issue(d, "agent", "ca", "muster agent", "extendedKeyUsage=clientAuth\n")
    issue(d, "stranger", "other_ca", "stranger", "extendedKeyUsage=clientAuth\n")
    issue(d, "node", "ca", "node",
          "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
    return d


def start_daemon(hosts, name, extra):
    proc = hosts.spawn(hosts.prefix + "-d",
                       [MUSTERD, "--host", DAEMON_ADDR, "--port", "0", *extra], name)
    found = {}

    def listening():
        found["port"] = bound_port(hosts.log(proc, "out"))
        return found["port"] is not None or proc.poll() is not None

    wait_for(listening, 10)
    check(found.get("port") is not None, f"{name} did not start (exit {proc.poll()})",
          hosts.log(proc))
    return proc, found["port"]


def mutual_tls(certs):
    """musterd's flags for mutual TLS with the certificates of make_certs()."""
    return ["--tls-cert", f"{certs}/musterd.pem", "--tls-key", f"{certs}/musterd.key",
            "--tls-client-ca", f"{certs}/ca.pem"]


def tls_conf(certs, cert=None, token=None):
    conf = f"tls_ca={certs}/ca.pem"
    if cert:
        conf += f",tls_cert={certs}/{cert}.pem,tls_key={certs}/{cert}.key"
    if token:
        conf += f",token_file={token}"
    return conf


def write_token(d):
    token = secrets.token_hex(16)
    path = os.path.join(d, "token")
    with open(path, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    return token, path


def namespace_setup():
    """What each namespace case starts from: root, no stale hosts, fresh
    certificates, an output directory, a token. Returns (certs, out, token,
    token_file)."""
    need_root()
    remove_stale_hosts()
    certs = make_certs()
    token, token_file = write_token(certs)
    return certs, tempdir(), token, token_file


def wait_exit(proc, timeout):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


@test
def mutual_tls_serves_certified_agents_and_refuses_the_rest_while_the_job_runs():
    certs, out, _, token_file = namespace_setup()
    with Hosts(3) as hosts:
        daemon, port = start_daemon(hosts, "musterd",
                                    mutual_tls(certs) + ["--token-file", token_file])
        endpoint = f"{DAEMON_ADDR}:{port}"

        def agent(i, conf, name, run_seconds="12"):
            args = agent_args(endpoint, host_addr(i), out, nnodes="2:3", nproc=1, run_id="tlsjob",
                              conf=conf, worker_args=["--run", run_seconds])
            return hosts.spawn(hosts.ns(i), args, name)

        members = [agent(i, tls_conf(certs, "agent", token_file), f"agent-h{i}") for i in (1, 2)]
        gen = wait_generation(out, 2, timeout=20)
        worker_pids = [rec["pid"] for rec in dumps(out)[gen].values()]

        # (its conf, what it is told, why musterd says it refused it)
        outsiders = {
            "no client certificate": (tls_conf(certs, token=token_file),
                                      "alert certificate required",
                                      "peer did not return a certificate"),
            "a certificate from another CA": (tls_conf(certs, "stranger", token_file),
                                              "alert unknown ca", "certificate verify failed"),
            "plain text": (f"token_file={token_file}", "this rendezvous requires TLS",
                           "the peer spoke plain text"),
        }

        def refusals():
            return [line for line in hosts.log(daemon).splitlines() if "event=tls_refused" in line]

        for n, (what, (conf, says, why)) in enumerate(outsiders.items()):
            before = len(refusals())
            proc = agent(3, conf, f"outsider-{n}")
            code = wait_exit(proc, 15)
            log = hosts.log(proc)
            check(code not in (None, 0), f"an agent with {what} was not refused (exit {code})", log)
            check(says in log, f"an agent with {what}: no '{says}' in its error", log)
            # One line per refused connection: an agent whose first attempt
            # met a reset before the TLS alert tries once more, and is
            # refused again, so one outsider may make two lines.
            deadline = time.monotonic() + 5
            while len(refusals()) == before and time.monotonic() < deadline:
                time.sleep(0.05)
            new = refusals()[before:]
            check(new and all(f"peer={host_addr(3)}:" in r and why in r for r in new),
                  f"musterd logs each refused connection of the agent with {what} as one "
                  f"tls_refused line naming h3 and '{why}'", hosts.log(daemon))

        # The job went on: the same generation, its workers alive, then success.
        check(sorted(dumps(out)) == [gen], f"generations {sorted(dumps(out))} after the refusals")
        check(all(pid_alive(p) for p in worker_pids), "a worker of the job died")
        for proc in members:
            code = wait_exit(proc, 30)
            check(code == 0, f"{proc.log_name} exited {code}", hosts.log(proc))
        check(daemon.poll() is None, "musterd died", hosts.log(daemon))

        # A daemon whose certificate names another host: the agent refuses it.
        impostor, impostor_port = start_daemon(hosts, "impostor", [
            "--tls-cert", f"{certs}/elsewhere.pem", "--tls-key", f"{certs}/elsewhere.key"])
        args = agent_args(f"{DAEMON_ADDR}:{impostor_port}", host_addr(1), out, nnodes="1:2",
                          nproc=1, run_id="elsewhere", conf=tls_conf(certs, "agent"))
        proc = hosts.spawn(hosts.ns(1), args, "misnamed")
        code = wait_exit(proc, 15)
        check(code not in (None, 0), f"an agent accepted a misnamed daemon (exit {code})",
              hosts.log(proc))
        check("certificate verify failed: IP address mismatch" in hosts.log(proc),
              "the agent says the certificate does not name the address", hosts.log(proc))
        check(impostor.poll() is None, "the daemon died of a refused handshake",
              hosts.log(impostor))
    left = hosts.leftovers()
    check(not left, f"left behind: {left}")
    for d in (out, certs, hosts.logs):
        shutil.rmtree(d, ignore_errors=True)


class Capture:
    """Every frame on interface `dev` (root namespace) while open, through a raw
    packet socket."""

    def __init__(self, dev):
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((dev, 0))
        self.sock.settimeout(0.1)
        self.frames = []
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while self.running:
            try:
                self.frames.append(self.sock.recv(65535))
            except socket.timeout:
                continue
            except OSError:
                return

    def stop(self):
        self.running = False
        self.thread.join(timeout=5)
        self.sock.close()
        return b"".join(self.frames)


def captured_run(hosts, out, endpoint, conf, run_id):
    """The bytes on h1's veth while an agent on h1 runs a one-node job to its end."""
    capture = Capture(f"{hosts.prefix}-h1")
    try:
        args = agent_args(endpoint, host_addr(1), out, nnodes="1:2", nproc=1, run_id=run_id,
                          conf=conf, worker_args=["--run", "0.5"])
        proc = hosts.spawn(hosts.ns(1), args, run_id)
        code = wait_exit(proc, 30)
        check(code == 0, f"the {run_id} job exited {code}", hosts.log(proc))
        time.sleep(0.2)  # the last frames reach the socket
    finally:
        wire = capture.stop()
    return wire, hosts.log(proc)


@test
def the_token_crosses_the_wire_in_plain_text_and_not_under_tls():
    certs, out, token, token_file = namespace_setup()
    with Hosts(1) as hosts:
        plain, plain_port = start_daemon(hosts, "plain", ["--token-file", token_file])
        wire, log = captured_run(hosts, out, f"{DAEMON_ADDR}:{plain_port}",
                                 f"token_file={token_file}", "plainjob")
        check(token.encode() in wire,
              f"the token is not in the plain-text capture ({len(wire)} bytes)", log)

        tls, tls_port = start_daemon(hosts, "tls", mutual_tls(certs) + ["--token-file", token_file])
        wire, log = captured_run(hosts, out, f"{DAEMON_ADDR}:{tls_port}",
                                 tls_conf(certs, "agent", token_file), "tlsjob")
        node = re.search(r"node=(\S+)", log)
        check(node is not None, "the agent logs its node id", log)
        check(len(wire) > 2000, f"the TLS capture holds only {len(wire)} bytes")
        check(b"\x16\x03" in wire, "no TLS handshake record in the capture")
        check(token.encode() not in wire, "the token crossed the wire under TLS")
        check(node.group(1).encode() not in wire, "the Join's node id crossed the wire under TLS")
        check(b"tlsjob" not in wire, "the run id crossed the wire under TLS")
        for daemon in (plain, tls):
            check(daemon.poll() is None, f"{daemon.log_name} died", hosts.log(daemon))
    left = hosts.leftovers()
    check(not left, f"left behind: {left}")
    for d in (out, certs, hosts.logs):
        shutil.rmtree(d, ignore_errors=True)


@test
def an_agent_serving_the_rendezvous_serves_mutual_tls_with_its_own_certificate():
    certs = make_certs()
    out = tempdir()
    try:
        port = free_port()
        conf = tls_conf(certs, "node") + ",last_call_timeout=0.2"
        args = agent_args(f"127.0.0.1:{port}", "127.0.0.1", out, nnodes="2", nproc=1,
                          run_id="embedded", conf=conf, worker_args=["--run", "0.5"])
        agents = [start(args)]
        time.sleep(0.3)  # the first one serves; the second joins it

        # A peer with the CA but no certificate of its own (it joins, by the
        # c10d rule) is refused in the handshake by the serving agent.
        code, _, err = run(agent_args(f"127.0.0.1:{port}", "127.0.0.1", out, nnodes="2", nproc=1,
                                      run_id="embedded", conf=tls_conf(certs)), timeout=20)
        check(code not in (None, 0) and "alert certificate required" in err,
              f"an agent without a client certificate was not refused (exit {code})", err)

        agents.append(start(args))
        errs = []
        for agent in agents:
            code = wait_exit(agent, 30)
            _, err = agent.communicate()
            errs.append(err)
            check(code == 0, f"an agent of the embedded TLS rendezvous exited {code}", err)
        check(len(dumps(out)) == 1 and len(dumps(out)[0]) == 2, f"workers: {dumps(out)}")
        # One line per refused connection: the peer without a certificate may
        # meet a reset before it reads the alert and try once more (TLS 1.3),
        # which is refused and logged too (as in the test above).
        refusals = [line for line in errs[0].splitlines() if "event=tls_refused" in line]
        check(1 <= len(refusals) <= 2 and all(
            "peer=127.0.0.1:" in line and 'why="peer did not return a certificate"' in line
            for line in refusals),
              "the serving agent logs a tls_refused line per refused connection, naming the "
              "peer and why", errs[0])
        code, _, err = run(agent_args(f"127.0.0.1:{free_port()}", "127.0.0.1", out, nnodes="1:2",
                                      nproc=1, conf=f"tls_ca={certs}/ca.pem,is_host=1"),
                           timeout=20)
        check(code == 1 and "serving the rendezvous over TLS needs tls_cert and tls_key" in err,
              f"is_host=1 with only tls_ca: exit {code}", err)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(certs, ignore_errors=True)


if __name__ == "__main__":
    run_tests()

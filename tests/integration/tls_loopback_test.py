"""TLS between an agent and musterd on loopback: what docs/security.md promises
an attacker gets with TLS on.

Certificates come from scripts/bench/tls_certs.sh (musterd's names localhost
and 127.0.0.1).

Checked:
  - with TLS and a token, an agent with the wrong token is refused at its
    first message, saying so, as in plain text; the right token runs a job;
  - tampering becomes a closed connection: a proxy between an agent and
    musterd flips one byte of the agent's TLS stream once the job runs;
    musterd closes that connection with one tls_refused line naming the
    record layer's failure, the agent connects again, and musterd goes on
    serving (the run is listed, the job ends normally);
  - one node (--nnodes 1) with a rendezvous named joins it, under mutual
    TLS and a token, as torchrun's agent does: the run is in musterd's
    /status.json while it runs.
"""
import json
import os
import socket
import ssl
import subprocess
import threading
import urllib.request

from elastic_harness import GEN_DUMP, agent_args, start_musterd, wait_generation
from harness import (MUSTER, SOURCE_DIR, base_env, check, free_port, kill_tree, run, run_tests,
                     start, tempdir, test, wait_for)


def make_certs():
    d = tempdir()
    code, _, err = run([os.path.join(SOURCE_DIR, "scripts", "bench", "tls_certs.sh"), d],
                       timeout=30)
    check(code == 0, f"tls_certs.sh: exit {code}", err)
    return d


def tls_flags(certs):
    return ["--tls-cert", f"{certs}/musterd.pem", "--tls-key", f"{certs}/musterd.key"]


def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def finish(proc, timeout):
    """(exit code, stderr) of `proc` once it ends; (None, stderr) when it is
    still running after `timeout` s, and then it is killed."""
    try:
        _, err = proc.communicate(timeout=timeout)
        return proc.returncode, err
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        _, err = proc.communicate()
        return None, err


@test
def with_tls_and_a_token_a_wrong_token_is_refused_at_its_first_message():
    certs = make_certs()
    token = write_file(os.path.join(certs, "token"), "s3cret\n")
    wrong = write_file(os.path.join(certs, "wrong"), "guess\n")
    daemon_log = os.path.join(certs, "musterd.err")
    with open(daemon_log, "w") as log:
        daemon, port = start_musterd(extra=tls_flags(certs) + ["--token-file", token], log=log)
    out = tempdir()
    endpoint = f"127.0.0.1:{port}"
    # --nnodes 1:2, not 1:1: a fixed single node runs without the rendezvous.
    refused = start(agent_args(endpoint, "127.0.0.1", out, nnodes="1:2", nproc=1,
                               conf=f"tls_ca={certs}/ca.pem,token_file={wrong}"))
    code, err = finish(refused, 10)
    check(code not in (None, 0), f"the agent with the wrong token: exit {code}", err)
    check("wrong token" in err, "the agent says the token is wrong", err)
    check(wait_for(lambda: "code=bad_token" in open(daemon_log).read(), 5),
          "musterd logs the refusal", open(daemon_log).read())
    check("event=tls_refused" not in open(daemon_log).read(),
          "TLS let the agent in; the token refused it", open(daemon_log).read())
    good = start(agent_args(endpoint, "127.0.0.1", out, nnodes="1:2", nproc=1,
                            conf=f"tls_ca={certs}/ca.pem,token_file={token}",
                            worker_args=["--run", "0"]))
    code, err = finish(good, 15)
    check(code == 0, f"the right token runs the job: exit {code}", err)
    check("event=join node=" in open(daemon_log).read(), "through musterd",
          open(daemon_log).read())


class FlippingProxy:
    """Forwards TCP connections from its port to `target`; once flip() is
    called, it flips one byte of the next TLS application-data record a
    client sends (the last byte: part of the record's authentication tag)."""

    def __init__(self, target):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.flipped = 0
        self._flip = threading.Event()
        self._lock = threading.Lock()
        self._sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def flip(self):
        self._flip.set()

    def close(self):
        for s in [self.listener] + self._sockets:
            try:
                s.close()
            except OSError:
                pass

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self.connections += 1
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False),
                             daemon=True).start()

    def _pump(self, src, dst, from_client):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                # 23: a TLS application-data record; the handshake is over.
                if from_client and data[0] == 23 and self._flip.is_set():
                    with self._lock:
                        if self.flipped == 0:
                            self.flipped = 1
                            data = data[:-1] + bytes([data[-1] ^ 0x01])
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@test
def a_byte_flipped_in_the_tls_stream_closes_the_connection_and_musterd_goes_on():
    certs = make_certs()
    daemon_log = os.path.join(certs, "musterd.err")
    with open(daemon_log, "w") as log:
        daemon, port = start_musterd(extra=tls_flags(certs), log=log)
    proxy = FlippingProxy(("127.0.0.1", port))
    try:
        out = tempdir()
        agent = start(agent_args(f"127.0.0.1:{proxy.port}", "127.0.0.1", out, nnodes="1:2",
                                 nproc=1, run_id="tampered", conf=f"tls_ca={certs}/ca.pem",
                                 worker_args=["--run", "3"]))
        wait_generation(out, 1)
        check(proxy.connections == 1, f"connections before the flip: {proxy.connections}")
        proxy.flip()  # the agent's next heartbeat is altered on its way
        check(wait_for(lambda: "event=tls_refused" in open(daemon_log).read(), 5),
              "musterd closes the tampered connection with one tls_refused line",
              open(daemon_log).read())
        refused = [line for line in open(daemon_log).read().splitlines()
                   if "event=tls_refused" in line]
        check(len(refused) == 1 and "peer=127.0.0.1" in refused[0]
              and ("bad record mac" in refused[0] or "decrypt" in refused[0]),
              "the line names the peer and the record layer's failure", refused)
        check(wait_for(lambda: proxy.connections >= 2, 10),
              f"the agent connects again (connections: {proxy.connections})",
              open(daemon_log).read())
        code, table, err = run([MUSTER, "status", "--rdzv-endpoint", f"127.0.0.1:{port}",
                                "--rdzv-conf", f"tls_ca={certs}/ca.pem"], env=base_env(),
                               timeout=15)
        check(code == 0 and "run tampered:" in table, f"musterd serves on: exit {code}", table,
              err)
        code, err = finish(agent, 20)
        check(code == 0, f"the job ends normally: exit {code}", err, open(daemon_log).read())
    finally:
        proxy.close()


@test
def one_node_with_a_named_rendezvous_joins_it_under_mutual_tls():
    certs = make_certs()
    token = write_file(os.path.join(certs, "token"), "s3cret\n")
    page_port = free_port()
    daemon, port = start_musterd(extra=tls_flags(certs) + [
        "--tls-client-ca", f"{certs}/ca.pem", "--token-file", token,
        "--metrics-port", str(page_port)])
    out = tempdir()
    conf = (f"tls_ca={certs}/ca.pem,tls_cert={certs}/agent.pem,tls_key={certs}/agent.key,"
            f"token_file={token}")
    agent = start([MUSTER, "--nnodes", "1", "--nproc-per-node", "1", "--rdzv-backend", "muster",
                   "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "one-node",
                   "--rdzv-conf", conf, GEN_DUMP, out, "--run", "3"], env=base_env())
    context = ssl.create_default_context(cafile=f"{certs}/ca.pem")
    context.load_cert_chain(f"{certs}/agent.pem", f"{certs}/agent.key")
    request = urllib.request.Request(f"https://127.0.0.1:{page_port}/status.json",
                                     headers={"Authorization": "Bearer s3cret"})

    def listed():
        try:
            status = json.loads(urllib.request.urlopen(request, timeout=5,
                                                       context=context).read())
        except OSError:
            return False
        return any(r.get("run_id") == "one-node" for r in status.get("runs", []))

    check(wait_for(listed, 15), "the one-node run is not in musterd's /status.json")
    code, err = finish(agent, 20)
    check(code == 0, f"the agent exited {code}", err)
    check(daemon.poll() is None, "musterd died")


if __name__ == "__main__":
    run_tests()

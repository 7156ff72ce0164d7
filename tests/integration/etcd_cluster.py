"""A real etcd cluster on loopback for the replica tests: N members of
Debian's etcd (etcd-server, 3.4), each with its client and peer port and a
data directory of its own under one temporary directory, started through the
harness (so the test's end kills them) and removed by close().

    cluster = EtcdCluster(3)        # waits until every member is healthy
    cluster.endpoints()             # "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
    cluster.kill(0)                 # SIGKILL of member 0
    cluster.close()

With tls=TestCerts(dir) the clients' URLs are https:// and etcd asks for a
client certificate signed by the test CA (--client-cert-auth); peers stay
http.
"""
import base64
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess

from harness import Skip, free_port, kill_tree, start, tempdir, wait_for

ETCD = "/usr/bin/etcd"


def require_etcd():
    if not os.access(ETCD, os.X_OK):
        raise Skip(f"no etcd at {ETCD} (scripts/install-deps.sh installs etcd-server)")


class TestCerts:
    """A throwaway CA and what it signs, made with the openssl command (P-256
    keys, 2 days): `server` for etcd (a SAN of IP 127.0.0.1), `client` for a
    replica, and `other_ca`, a CA that signed neither. Paths: ca, server_cert,
    server_key, client_cert, client_key, other_ca."""

    def __init__(self, directory):
        if shutil.which("openssl") is None:
            raise Skip("no openssl command (scripts/install-deps.sh installs openssl)")
        self.dir = directory

        def path(name):
            return os.path.join(directory, name)

        def openssl(*args):
            subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

        def ca(name):
            openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", path(f"{name}.key"), "-out", path(f"{name}.pem"),
                    "-days", "2", "-subj", f"/CN=muster test {name}")
            return path(f"{name}.pem")

        def signed(name, usage):
            with open(path(f"{name}.ext"), "w") as f:
                f.write(f"subjectAltName=IP:127.0.0.1\nextendedKeyUsage={usage}\n")
            openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", path(f"{name}.key"), "-out", path(f"{name}.csr"),
                    "-subj", f"/CN=muster test {name}")
            openssl("x509", "-req", "-in", path(f"{name}.csr"), "-CA", path("ca.pem"),
                    "-CAkey", path("ca.key"), "-CAcreateserial", "-out", path(f"{name}.pem"),
                    "-days", "2", "-extfile", path(f"{name}.ext"))
            return path(f"{name}.pem"), path(f"{name}.key")

        self.ca = ca("ca")
        self.other_ca = ca("other-ca")
        # clientAuth too: etcd's JSON gateway dials etcd's own gRPC with the
        # server's certificate, which --client-cert-auth then checks.
        self.server_cert, self.server_key = signed("server", "serverAuth,clientAuth")
        self.client_cert, self.client_key = signed("client", "clientAuth")

    def client_context(self):
        context = ssl.create_default_context(cafile=self.ca)
        context.load_cert_chain(self.client_cert, self.client_key)
        return context


def connection(port, timeout, tls):
    if tls is None:
        return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    return http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout,
                                       context=tls.client_context())


def healthy(port, tls=None):
    try:
        conn = connection(port, 0.5, tls)
        conn.request("GET", "/health")
        body = conn.getresponse().read()
        conn.close()
        return json.loads(body).get("health") == "true"
    except (OSError, ValueError, http.client.HTTPException):
        return False


def post(port, path, body, tls=None):
    conn = connection(port, 2, tls)
    conn.request("POST", path, json.dumps(body))
    answer = json.loads(conn.getresponse().read())
    conn.close()
    return answer


class EtcdCluster:
    def __init__(self, members, tls=None):
        require_etcd()
        self.tls = tls
        self.scheme = "https" if tls else "http"
        self.dir = tempdir()
        self.client_ports = [free_port() for _ in range(members)]
        self.peer_ports = [free_port() for _ in range(members)]
        self.names = [f"m{i}" for i in range(members)]
        self.initial = ",".join(f"{n}=http://127.0.0.1:{p}"
                                for n, p in zip(self.names, self.peer_ports))
        self.procs = [self._start(i) for i in range(members)]
        ok = wait_for(lambda: all(healthy(p, tls) for p in self.client_ports), 20)
        if not ok:
            self.close()
            raise AssertionError(f"etcd cluster of {members} not healthy within 20 s "
                                 f"(logs in {self.dir})")

    def _start(self, i):
        log = open(os.path.join(self.dir, f"{self.names[i]}.log"), "a")
        client = f"{self.scheme}://127.0.0.1:{self.client_ports[i]}"
        peer = f"http://127.0.0.1:{self.peer_ports[i]}"
        tls = [] if self.tls is None else [
            "--cert-file", self.tls.server_cert, "--key-file", self.tls.server_key,
            "--client-cert-auth", "--trusted-ca-file", self.tls.ca]
        return start([ETCD, "--name", self.names[i], *tls,
                      "--data-dir", os.path.join(self.dir, self.names[i]),
                      "--listen-client-urls", client, "--advertise-client-urls", client,
                      "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                      "--initial-cluster", self.initial, "--initial-cluster-state", "new",
                      "--initial-cluster-token", os.path.basename(self.dir),
                      "--logger", "zap", "--log-outputs", "stderr"],
                     stdout=log, stderr=log)

    def endpoints(self):
        prefix = "https://" if self.tls else ""
        return ",".join(f"{prefix}127.0.0.1:{p}" for p in self.client_ports)

    def get(self, key):
        """The value of `key` (str), or None; asked of the first member alive."""
        for i, port in enumerate(self.client_ports):
            if self.procs[i].poll() is not None:
                continue
            answer = post(port, "/v3/kv/range",
                          {"key": base64.b64encode(key.encode()).decode()}, self.tls)
            kvs = answer.get("kvs", [])
            return base64.b64decode(kvs[0]["value"]).decode() if kvs else None
        return None

    def raft_leader(self):
        """The index of the member that leads etcd's own raft, or None."""
        for i, port in enumerate(self.client_ports):
            try:
                status = post(port, "/v3/maintenance/status", {}, self.tls)
            except (OSError, ValueError, http.client.HTTPException):
                continue
            if status.get("leader") and status.get("leader") == status["header"].get("member_id"):
                return i
        return None

    def kill(self, i):
        kill_tree(self.procs[i].pid)
        self.procs[i].wait()

    def pause(self, i):
        os.kill(self.procs[i].pid, signal.SIGSTOP)

    def resume(self, i):
        os.kill(self.procs[i].pid, signal.SIGCONT)

    def close(self):
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                kill_tree(proc.pid)
                proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


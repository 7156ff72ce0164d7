"""Helpers for the worker-store integration tests.

StoreServerProcess runs tests/store_server_main (built by store_tests.cmake)
and talks to its stdin command channel. Every process a test starts is
recorded and killed by PID in a finally block.
"""
import datetime
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

import harness
from harness import check  # noqa: F401 - the store tests import it from here
from store_wire import i64, s, u8, u32, u64  # noqa: F401 - likewise

BIN_DIR = os.environ.get("MUSTER_TEST_BIN_DIR")
if not BIN_DIR:
    sys.exit("MUSTER_TEST_BIN_DIR is not set (run through ctest)")
SERVER_BIN = os.path.join(BIN_DIR, "store_server_main")


class LineReader:
    """Reads lines from a pipe with a deadline (no blocking readline)."""

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        self.buf = b""

    def readline(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no line within {timeout}s (have {self.buf!r})")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    raise EOFError(f"pipe closed (have {self.buf!r})")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


class StoreServerProcess:
    def __init__(self, port=0, settle_ms=None, env=None):
        self.stderr = tempfile.TemporaryFile()
        env = dict(os.environ, **(env or {}))
        if settle_ms is not None:
            env["MUSTER_STORE_SETTLE_MS"] = str(settle_ms)
        self.proc = subprocess.Popen([SERVER_BIN, str(port)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env)
        self.out = LineReader(self.proc.stdout)
        try:
            line = self.out.readline(10)
        except Exception:
            self.stop()
            raise
        if not line.startswith("port="):
            self.stop()
            raise AssertionError(f"expected port=N, got {line!r}")
        self.port = int(line[len("port="):])

    def command(self, cmd):
        self.proc.stdin.write((cmd + "\n").encode())
        self.proc.stdin.flush()
        return self.out.readline(10)

    def stats(self):
        """{'connections': C, 'keys': K, 'waits': W}"""
        return {k: int(v) for k, v in (kv.split("=") for kv in self.command("stats").split())}

    def wait_for_stats(self, timeout=10, **want):
        deadline = time.monotonic() + timeout
        while True:
            got = self.stats()
            if all(got[k] == v for k, v in want.items()):
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"stats never reached {want}: last {got}")
            time.sleep(0.05)

    def log(self):
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


def torch_client(port, timeout_s=10, world_size=1):
    """A real torch 1.13 TCPStore client, as a worker under an agent store uses it."""
    import torch.distributed as dist
    return dist.TCPStore("127.0.0.1", port, world_size, False,
                         timeout=datetime.timedelta(seconds=timeout_s))


def raw_connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exact(sock, n, timeout=10):
    sock.settimeout(timeout)
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def closed_by_peer(sock, timeout=5):
    """True when the server closes `sock` (EOF or reset) within `timeout`."""
    sock.settimeout(timeout)
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def run_tests(tests):
    """Runs each (name, fn) through harness.run_tests, the one test runner
    (PASS/FAIL/SKIP lines, exit 1 on a failure, 77 when all skipped)."""
    for name, fn in tests:
        fn.__name__ = name.replace(" ", "_")
        harness.test(fn)
    harness.run_tests()


def with_server(fn=None, *, settle_ms=None, env=None):
    """Runs fn(server) against a fresh store server (with `env` added to its
    environment), killed afterwards."""
    if fn is None:
        return lambda f: with_server(f, settle_ms=settle_ms, env=env)

    def run():
        server = StoreServerProcess(settle_ms=settle_ms, env=env)
        try:
            fn(server)
        except Exception:
            print("---- store server log ----\n" + server.log(), flush=True)
            raise
        finally:
            server.stop()
    return run

"""The worker runtime's StoreClient (driven by tests/runtime_store_probe)
against muster's worker store and against a real torch 1.13 TCPStore server,
interleaved with real torch 1.13 clients.

Every process is started through harness.start and killed by PID when its
test ends, pass or fail.
"""
import datetime
import os
import subprocess
import sys
import time

import harness
from harness import check, run_tests, test

BIN_DIR = os.environ.get("MUSTER_TEST_BIN_DIR")
if not BIN_DIR:
    sys.exit("MUSTER_TEST_BIN_DIR is not set (run through ctest)")
PROBE_BIN = os.path.join(BIN_DIR, "runtime_store_probe")
SERVER_BIN = os.path.join(BIN_DIR, "store_server_main")

from store_harness import LineReader  # noqa: E402 - needs MUSTER_TEST_BIN_DIR checked first

# torch's client sends "/" + key and PrefixStore adds "<prefix>/": the probe
# with PREFIX reaches the same keys as PrefixStore(TORCH_PREFIX, client).
TORCH_PREFIX = "muster/0"
PREFIX = "/" + TORCH_PREFIX + "/"


class Probe:
    """A runtime_store_probe process: one command line in, one result line out."""

    def __init__(self, port, prefix=PREFIX, timeout_ms=10000, connect_timeout_ms=10000):
        self.proc = harness.start([PROBE_BIN, "127.0.0.1", str(port), prefix, str(timeout_ms),
                                   str(connect_timeout_ms)], stdin=subprocess.PIPE)
        self.out = LineReader(self.proc.stdout)

    def connected(self):
        line = self.receive()
        check(line.startswith("connected"), f"probe did not connect: {line!r}\n{self.stderr()}")
        return self

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def receive(self, timeout=30):
        return self.out.readline(timeout)

    def run(self, command, timeout=30):
        self.send(command)
        return self.receive(timeout)

    def stderr(self):
        if self.proc.poll() is None:
            return ""
        return self.proc.stderr.read()


def field(line, name):
    for word in line.split():
        if word.startswith(name + "="):
            return word[len(name) + 1:]
    raise AssertionError(f"no {name}= in {line!r}")


def muster_store(port=0):
    """Starts tests/store_server_main; returns its port."""
    proc = harness.start([SERVER_BIN, str(port)], stdin=subprocess.PIPE)  # EOF stops it
    line = LineReader(proc.stdout).readline(10)
    check(line.startswith("port="), f"expected port=N from the store, got {line!r}")
    return int(line[len("port="):])


_torch_servers = []  # kept alive until the process ends; each is its own port


def torch_store():
    """Starts a real torch 1.13 TCPStore server in this process; returns its port."""
    import torch.distributed as dist
    server = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=30))
    _torch_servers.append(server)
    return server.port


def torch_clients(port):
    """A torch client under PrefixStore(TORCH_PREFIX), and the plain client beneath."""
    import torch.distributed as dist
    client = dist.TCPStore("127.0.0.1", port, 1, False, timeout=datetime.timedelta(seconds=10))
    return dist.PrefixStore(TORCH_PREFIX, client), client


def torch_client(port):
    return torch_clients(port)[0]


SERVERS = {"muster": muster_store, "torch": torch_store}


def scripted_sequence(port):
    p = Probe(port).connected()
    check(p.run("set a 1") == "ok", "set")
    check(p.run("get a 5000").startswith("value=1 "), "get returns what set stored")
    check(p.run("add n 5") == "value=5", "add on a missing key starts at 0")
    check(p.run("add n -2") == "value=3", "add a negative delta")
    check(p.run("get n 5000").startswith("value=3 "), "add stores decimal ASCII")
    check(p.run("cas c <empty> first") == "value=first", "compare_set creates on empty expected")
    check(p.run("cas c first second") == "value=second", "compare_set swaps on match")
    check(p.run("cas c wrong third") == "value=second", "compare_set keeps on mismatch")
    check(p.run("check a n c") == "value=true", "check of present keys")
    check(p.run("check a missing") == "value=false", "check with a missing key")
    line = p.run("wait 300 missing")
    check(line.startswith("error=Timeout"), f"wait on a missing key times out: {line!r}")
    check(p.run("wait 1000 a n").startswith("ok "), "wait on present keys, after a timeout")
    check(p.run("delete a") == "value=true", "delete of a present key")
    check(p.run("delete a") == "value=false", "delete of a missing key")
    check(p.run("check a") == "value=false", "a deleted key is gone")
    # The prefix is on the wire: a torch client with the matching PrefixStore
    # sees the keys, and a torch client without it does not.
    t, plain = torch_clients(port)
    check(t.get("n") == b"3", "torch sees the probe's prefixed key")
    check(t.get("c") == b"second", "torch sees compare_set's result")
    check(plain.get(TORCH_PREFIX + "/n") == b"3", "the key is stored under the prefix")
    # torch 1.13's Python API has no check(); a probe without a prefix sees the
    # raw wire keys. Had the first probe dropped its prefix, "n" would exist.
    raw = Probe(port, prefix="<empty>").connected()
    check(raw.run(f"check {PREFIX}n") == "value=true", "the wire key carries the prefix")
    check(raw.run("check n") == "value=false", "the bare key was never sent")


@test
def scripted_sequence_against_muster_store():
    scripted_sequence(muster_store())


@test
def scripted_sequence_against_torch_store():
    scripted_sequence(torch_store())


def cross_visibility(port):
    p = Probe(port).connected()
    t, plain = torch_clients(port)
    check(p.run("set from_probe hello") == "ok", "probe set")
    check(t.get("from_probe") == b"hello", "torch reads the probe's key")
    t.set("from_torch", "world")
    check(p.run("get from_torch 5000").startswith("value=world "), "probe reads torch's key")
    check(t.add("counter", 10) == 10, "torch add")
    check(p.run("add counter 1") == "value=11", "probe adds to torch's counter")
    check(t.add("counter", 1) == 12, "torch sees the probe's add")
    check(p.run("delete from_torch") == "value=true", "probe deletes torch's key")
    check(plain.delete_key(TORCH_PREFIX + "/from_torch") is False, "torch sees the delete")


@test
def keys_are_shared_with_torch_clients_on_muster_store():
    cross_visibility(muster_store())


@test
def keys_are_shared_with_torch_clients_on_torch_store():
    cross_visibility(torch_store())


def wait_times_out_within_deadline(port):
    p = Probe(port).connected()
    t0 = time.monotonic()
    line = p.run("wait 1000 never")
    elapsed = time.monotonic() - t0
    check(line.startswith("error=Timeout"), f"wait fails with Timeout: {line!r}")
    check("WAIT" in line and "never" in line and f"127.0.0.1:{port}" in line
          and "1000 ms" in line, f"the error names op, key, endpoint, timeout: {line!r}")
    reported = int(field(line, "elapsed_ms"))
    check(950 <= reported < 1500, f"wait gave up after {reported} ms, wanted ~1000")
    check(elapsed < 3, f"the probe answered after {elapsed:.2f}s")
    # get has the same deadline (it waits for the key first).
    line = p.run("get never 500")
    check(line.startswith("error=Timeout") and "GET" in line, f"get times out: {line!r}")
    check(450 <= int(field(line, "elapsed_ms")) < 1000, f"get deadline: {line!r}")
    # The connection was dropped on timeout; the next call reconnects and a
    # key that appears now is not confused with the abandoned wait's reply.
    torch_client(port).set("never", "late")
    check(p.run("add after 1") == "value=1", "a call after a timeout works")
    check(p.run("get never 5000").startswith("value=late "), "get after a timeout")


@test
def wait_times_out_within_deadline_on_muster_store():
    wait_times_out_within_deadline(muster_store())


@test
def wait_times_out_within_deadline_on_torch_store():
    wait_times_out_within_deadline(torch_store())


def get_waits_for_a_later_key(port):
    p = Probe(port).connected()
    t = torch_client(port)
    p.send("get later 10000")
    time.sleep(0.5)
    t.set("later", "arrived")
    line = p.receive(15)
    check(line.startswith("value=arrived "), f"get returns the later key: {line!r}")
    check(400 <= int(field(line, "elapsed_ms")) < 5000, f"get waited for the key: {line!r}")


@test
def get_waits_for_a_key_set_later_on_muster_store():
    get_waits_for_a_later_key(muster_store())


@test
def get_waits_for_a_key_set_later_on_torch_store():
    get_waits_for_a_later_key(torch_store())


@test
def connect_retries_until_the_store_starts():
    port = harness.free_port()
    p = Probe(port, connect_timeout_ms=10000)  # started before the store exists
    time.sleep(0.5)
    check(p.proc.poll() is None, "the probe keeps retrying a refused connection")
    muster_store(port)
    line = p.receive(15)
    check(line.startswith("connected"), f"the probe connects once the store is up: {line!r}")
    check(int(field(line, "elapsed_ms")) >= 400, f"it connected after the store started: {line!r}")
    check(p.run("set k v") == "ok", "and works")


@test
def connect_to_a_store_that_never_starts_times_out():
    port = harness.free_port()
    p = Probe(port, connect_timeout_ms=700)
    line = p.receive()
    check(line.startswith("error=Timeout"), f"connect fails with Timeout: {line!r}")
    check(f"127.0.0.1:{port}" in line and "700 ms" in line, f"names endpoint and timeout: {line!r}")
    check(650 <= int(field(line, "elapsed_ms")) < 1500, f"connect deadline: {line!r}")
    check(p.proc.wait(timeout=10) == 1, "the probe exits 1")


@test
def a_reconnect_cut_short_by_connect_timeout_reports_that_budget():
    port = harness.free_port()
    store = harness.start([SERVER_BIN, str(port)], stdin=subprocess.PIPE)
    line = LineReader(store.stdout).readline(10)
    check(line == f"port={port}", f"expected port={port} from the store, got {line!r}")
    p = Probe(port, timeout_ms=5000, connect_timeout_ms=700).connected()
    check(p.run("set k v") == "ok", "set while the store is up")
    harness.kill_tree(store.pid)
    store.wait(timeout=10)
    # The first call finds its connection closed; the next reconnects, and the
    # 700 ms connect_timeout ends that before the call's 5000 ms timeout.
    line = p.run("add n 1")
    check(line.startswith("error="), f"a call on the dead connection fails: {line!r}")
    line = p.run("add n 1")
    check(line.startswith("error=Timeout"), f"the reconnect times out: {line!r}")
    check("700 ms (connect_timeout)" in line and "5000 ms" not in line,
          f"the error names the budget that expired: {line!r}")
    check(650 <= int(field(line, "elapsed_ms")) < 1500, f"connect_timeout bounds it: {line!r}")


@test
def a_dropped_connection_is_reestablished_on_the_next_call():
    port = muster_store()
    p = Probe(port).connected()
    check(p.run("set word abc") == "ok", "set a non-number")
    # muster's store closes the connection of an ADD on a non-number, as
    # torch's server does.
    line = p.run("add word 1")
    check(line.startswith("error=IoError") and "ADD" in line and f"127.0.0.1:{port}" in line,
          f"the closed connection is an IoError naming op and endpoint: {line!r}")
    check(p.run("get word 5000").startswith("value=abc "), "the next call reconnects")


if __name__ == "__main__":
    run_tests()

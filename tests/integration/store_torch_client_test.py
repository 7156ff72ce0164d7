"""The worker store against Debian's real torch 1.13 TCPStore client
(is_master=False, as every worker is under an agent store), in this process:
large values, waits and their clean-up, the server's own life. Every
operation of each torch version's client (1.13, 2.6, 2.14) is in
store_torch_versions_test.py."""
import datetime
import os
import signal
import subprocess
import sys
import threading
import time

from store_harness import (SERVER_BIN, check, run_tests, torch_client,
                           with_server)

T = datetime.timedelta


@with_server
def test_large_value(server):
    c = torch_client(server.port)
    big = os.urandom(16 << 20)
    c.set("big", big)
    check(c.get("big") == big, "a 16 MiB value round-trips")


@with_server
def test_wait_is_woken_by_another_client(server):
    waiter = torch_client(server.port)
    setter = torch_client(server.port)
    result = {}

    def wait():
        t0 = time.monotonic()
        try:
            waiter.wait(["a", "b"], T(seconds=20))
            result["elapsed"] = time.monotonic() - t0
        except Exception as e:  # reported by the main thread
            result["error"] = e

    th = threading.Thread(target=wait, daemon=True)
    th.start()
    server.wait_for_stats(waits=1)
    setter.set("a", "1")
    time.sleep(0.3)
    check(th.is_alive(), "a wait on two keys is not woken by one")
    setter.add("b", 1)
    th.join(10)
    check(not th.is_alive(), "the wait returned after both keys were written")
    check("error" not in result, f"wait raised {result.get('error')!r}")
    check(result["elapsed"] < 5, f"woken promptly, took {result['elapsed']:.2f}s")
    check(waiter.get("b") == b"1", "the waiter's connection still works")


CHILD_WAITER = """
import datetime, sys, torch.distributed as dist
c = dist.TCPStore("127.0.0.1", int(sys.argv[1]), 1, False, timeout=datetime.timedelta(seconds=60))
print("waiting", flush=True)
c.wait(["never"], datetime.timedelta(seconds=60))
"""


@with_server
def test_pending_wait_is_cleaned_up_when_its_client_dies(server):
    base = server.stats()["connections"]
    child = subprocess.Popen([sys.executable, "-c", CHILD_WAITER, str(server.port)],
                             stdout=subprocess.PIPE)
    try:
        server.wait_for_stats(waits=1, timeout=30)
        check(server.stats()["connections"] > base, "the child is connected")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        server.wait_for_stats(waits=0, connections=base)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)


@with_server
def test_a_new_generation_gives_a_fresh_namespace(server):
    c = torch_client(server.port)
    c.set("a", "1")
    check(c.get("a") == b"1", "stored (SET has no reply: a GET makes sure)")
    check(server.stats()["keys"] == 2, "init/ and a")
    check(server.command("seal") == "sealed", "seal acknowledged")
    check(server.command("open 2") == "opened", "open acknowledged")
    try:
        c.get("a")
        raise AssertionError("the earlier generation's client still reads the store")
    except RuntimeError:
        pass  # its connection was closed
    fresh = torch_client(server.port)  # world_size=1: ADDs "init/" again
    check(fresh.num_keys() == 1, f"only the new client's init/ key, got {fresh.num_keys()}")
    check(fresh.add("a", 1) == 1, "counters restart from zero")


@with_server
def test_client_sees_an_error_when_the_server_goes_away(server):
    c = torch_client(server.port)
    c.set("k", "v")
    os.kill(server.proc.pid, signal.SIGTERM)
    check(server.proc.wait(10) == 0, "the server exits 0 on SIGTERM")
    t0 = time.monotonic()
    try:
        c.add("k2", 1)
        raise AssertionError("an op on a closed store succeeded")
    except RuntimeError as e:
        print(f"client error after server stop: {e}", flush=True)
    check(time.monotonic() - t0 < 5, "the error comes promptly, not at the timeout")


@with_server
def test_a_port_in_use_is_reported_with_host_and_port(server):
    second = subprocess.run([SERVER_BIN, str(server.port)], stdin=subprocess.DEVNULL,
                            capture_output=True, timeout=10)
    err = second.stderr.decode()
    check(second.returncode == 1, f"second server on the same port exits 1, got {second.returncode}")
    check(f"127.0.0.1:{server.port}" in err, f"the error quotes host:port: {err!r}")
    c = torch_client(server.port)
    c.set("still", "serving")
    check(c.get("still") == b"serving", "the first server is unaffected")


def test_a_bad_host_is_reported_with_host_and_port():
    bad = subprocess.run([SERVER_BIN, "0", "no-such-host.invalid"], stdin=subprocess.DEVNULL,
                         capture_output=True, timeout=30)
    err = bad.stderr.decode()
    check(bad.returncode == 1, f"exits 1, got {bad.returncode}")
    check("no-such-host.invalid:0" in err, f"the error quotes host:port: {err!r}")


if __name__ == "__main__":
    run_tests([
        ("large value", test_large_value),
        ("wait is woken by another client", test_wait_is_woken_by_another_client),
        ("pending wait is cleaned up when its client dies",
         test_pending_wait_is_cleaned_up_when_its_client_dies),
        ("a new generation gives a fresh namespace", test_a_new_generation_gives_a_fresh_namespace),
        ("client sees an error when the server goes away",
         test_client_sees_an_error_when_the_server_goes_away),
        ("a port in use is reported with host and port",
         test_a_port_in_use_is_reported_with_host_and_port),
        ("a bad host is reported with host and port",
         test_a_bad_host_is_reported_with_host_and_port),
    ])

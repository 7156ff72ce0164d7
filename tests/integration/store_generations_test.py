"""Generation fencing of the worker store (rendezvous/PROTOCOL.md): the
workers of each generation and restart attempt meet a store holding no key of
an earlier one, and a connection left from an earlier one cannot write into
it. The stale client here speaks the TCPStore wire protocol directly (torch
1.13's dialect: SET 0, CHECK 4), so it keeps its connection across the change
of generation as no torch worker of muster's would."""
import os
import signal
import socket
import struct
import time

from elastic_harness import agent_of_rank, dumps, start_agent, start_musterd, wait_generation
from harness import check, run_tests, tempdir, test, wait_for


def string(s):
    return struct.pack("<Q", len(s)) + s


def stale_set(sock, key, value):
    sock.sendall(b"\x00" + string(key) + string(value))


def key_exists(addr, port, key):
    with socket.create_connection((addr, port), timeout=5) as s:
        s.sendall(b"\x04" + struct.pack("<Q", 1) + string(key))
        return s.recv(1) == b"\x00"  # CHECK replies 0 when every key is present


def closed_by_peer(sock, timeout):
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


@test
def a_new_generation_meets_an_empty_store_and_old_connections_are_closed():
    daemon, port = start_musterd()
    out = tempdir()
    agents = [start_agent(port, out) for _ in range(3)]
    gen = wait_generation(out, 6)
    env = dumps(out)[gen][0]["env"]
    addr, store_port = env["MASTER_ADDR"], int(env["MASTER_PORT"])

    stale = socket.create_connection((addr, store_port), timeout=5)
    stale_set(stale, b"gen1/key", b"from generation 1")
    check(wait_for(lambda: key_exists(addr, store_port, b"gen1/key"), 5),
          "the first generation's key was not stored")

    # A node that is not the master leaves: the survivors form a new generation.
    victim = agent_of_rank(agents, out, gen, 4)
    os.kill(victim.pid, signal.SIGKILL)
    new_gen = wait_generation(out, 4, after=gen)
    new_env = dumps(out)[new_gen][0]["env"]
    check((new_env["MASTER_ADDR"], int(new_env["MASTER_PORT"])) == (addr, store_port),
          f"the master moved ({new_env['MASTER_ADDR']}:{new_env['MASTER_PORT']}); "
          "this test needs the same store in both generations")

    check(closed_by_peer(stale, 5), "the earlier generation's connection is still open")
    try:
        stale_set(stale, b"gen1/late", b"written after the change")
    except OSError:
        pass  # refused at once: the connection is gone
    time.sleep(0.2)
    check(not key_exists(addr, store_port, b"gen1/key"), "a key of generation 1 survived")
    check(not key_exists(addr, store_port, b"gen1/late"), "a stale connection wrote into the store")
    check(daemon.poll() is None, "musterd died")


if __name__ == "__main__":
    run_tests()

"""Every store operation one real torch version's TCPStore client has, against
the store at 127.0.0.1:PORT. Run by store_torch_versions_test.py with that
version's Python (torch_versions.TorchVersion.python):

    PYTHON store_torch_ops.py PORT

Prints one JSON line, {"torch": VERSION, "has": [methods]}, and exits 0 when
every check passed; a failed check raises (exit 1, traceback on stderr).
Operations a version lacks are skipped here: the caller asserts which
version has which.
"""
import datetime
import json
import sys
import threading
import time

import torch
import torch.distributed as dist

T = datetime.timedelta
PORT = int(sys.argv[1])
EXTENDED = ["check", "append", "multi_get", "multi_set", "list_keys", "barrier", "queue_push",
            "queue_pop", "queue_len"]


def client(timeout_s=10, world_size=1):
    """A worker's client: is_master=False; use_libuv=False where it exists
    (Debian builds torch without libuv)."""
    args = ("127.0.0.1", PORT, world_size, False)
    try:
        return dist.TCPStore(*args, timeout=T(seconds=timeout_s), use_libuv=False)
    except TypeError:  # torch 1.13: no use_libuv
        return dist.TCPStore(*args, timeout=T(seconds=timeout_s))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def basic_operations(c):
    c.set("k1", "v1")
    check(c.get("k1") == b"v1", "get returns what set stored")
    binary = bytes(range(256)) * 3
    c.set("bin", binary)
    check(c.get("bin") == binary, "binary values round-trip")
    c.set("empty", b"")
    check(c.get("empty") == b"", "empty values round-trip")
    check(c.add("cnt", 5) == 5, "add on a missing key starts from 0")
    check(c.add("cnt", -2) == 3, "add a negative delta")
    check(c.get("cnt") == b"3", "add stores decimal ASCII")
    c.set("num", "40")
    check(c.add("num", 2) == 42, "add continues a decimal value set by set")
    check(c.compare_set("cas", "", "new") == b"new", "compare_set creates on empty expected")
    check(c.compare_set("cas2", "x", "new") == b"x", "compare_set on a missing key echoes expected")
    check(c.compare_set("cas", "new", "newer") == b"newer", "compare_set swaps on match")
    check(c.compare_set("cas", "zzz", "q") == b"newer", "compare_set keeps on mismatch")
    # init/ k1 bin empty cnt num cas
    check(c.num_keys() == 7, f"num_keys counts every key, got {c.num_keys()}")
    c.wait(["k1", "cnt"])
    c.wait(["k1"], T(seconds=1))
    check(c.delete_key("k1") is True, "delete_key of a present key")
    check(c.delete_key("k1") is False, "delete_key of a missing key")
    check(c.num_keys() == 6, "num_keys after delete")


def wait_times_out_and_the_connection_stays_usable(c, other):
    t0 = time.monotonic()
    try:
        c.wait(["late"], T(seconds=1))
        raise AssertionError("wait on a missing key returned")
    except RuntimeError as e:
        check("imeout" in str(e), f"wait fails with a timeout, got {e!r}")
    elapsed = time.monotonic() - t0
    check(0.9 <= elapsed < 5, f"wait timed out after {elapsed:.2f}s, wanted ~1s")
    # 1.13 cannot cancel its WAIT (the store drops it at the next request);
    # 2.x sends CANCEL_WAIT. Either way "late" appearing now must not put a
    # stray STOP_WAITING into c's stream.
    check(c.add("n", 7) == 7, "add after a timed-out wait")
    other.set("late", "now")
    c.set("after", "x")
    check(c.get("after") == b"x", "get after a timed-out wait")
    check(c.get("late") == b"now", "the late key is there")


def a_fresh_client_deletes_first(port_client):
    # torch 1.13: an undecided connection's DELETE_KEY, told from 2.1's APPEND
    # by the silence after its key (store/dialect_rule.h).
    fresh = port_client()
    check(fresh.delete_key("cnt") is True, "delete_key as a client's first distinguishing request")
    check(fresh.add("cnt", 1) == 1, "and the connection goes on")


def extended_operations(c, has):
    if "check" in has:
        check(c.check(["bin", "cnt"]) is True, "check of present keys")
        check(c.check(["bin", "nope"]) is False, "check with a missing key")
    if "append" in has:
        c.append("app", "po")
        c.append("app", "tato")
        check(c.get("app") == b"potato", "append creates, then appends")
    if "multi_set" in has:
        c.multi_set(["m1", "m2"], ["1", "22"])
    if "multi_get" in has:
        check(c.multi_get(["m1", "m2"]) == [b"1", b"22"], "multi_get returns values in order")
    if "list_keys" in has:
        want = {"bin", "empty", "cnt", "num", "cas", "n", "late", "after", "app", "m1", "m2"}
        got = set(c.list_keys())
        check(got == want, f"list_keys lists every key under the client's prefix: {sorted(got)}")


def barrier(c, has):
    if "barrier" not in has:
        return
    c.barrier("solo", 1)
    other = client()
    done = {}
    th = threading.Thread(target=lambda: done.setdefault("r", other.barrier("b", 2)), daemon=True)
    th.start()
    time.sleep(0.3)
    check(th.is_alive(), "one of two arrivals waits")
    c.barrier("b", 2)
    th.join(10)
    check(not th.is_alive(), "the second arrival releases the first")
    t0 = time.monotonic()
    try:
        c.barrier("never", 2, T(milliseconds=500))
        raise AssertionError("a barrier of one arrival out of two returned")
    except RuntimeError as e:
        check("barrier timeout" in str(e), f"barrier times out: {e!r}")
    check(time.monotonic() - t0 < 5, "promptly")
    check(c.add("after_barrier", 1) == 1, "the connection works after CANCEL_WAIT")


def queues(c, has):
    if "queue_push" not in has:
        return
    # Debian builds torch without libuv; the client refuses queue operations
    # without it before sending anything (torch's TCPStore.cpp queuePush).
    for name, args in [("queue_push", ("q", "x")), ("queue_len", ("q",)),
                       ("queue_pop", ("q", False))]:
        try:
            getattr(c, name)(*args)
            raise AssertionError(f"{name} worked on a client without libuv")
        except NotImplementedError as e:
            check("libuv" in str(e) or "legacy" in str(e), f"{name}: {e!r}")
    check(c.add("after_queue", 1) == 1, "nothing reached the wire: the connection is fine")


def main():
    has = [name for name in EXTENDED if hasattr(dist.TCPStore, name)]
    c = client()  # world_size=1: the constructor ADDs "init/"
    other = client()
    basic_operations(c)
    wait_times_out_and_the_connection_stays_usable(c, other)
    a_fresh_client_deletes_first(client)
    extended_operations(c, has)
    barrier(c, has)
    queues(c, has)
    print(json.dumps({"torch": torch.__version__, "has": has}), flush=True)


if __name__ == "__main__":
    main()

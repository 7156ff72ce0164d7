"""The worker store against each real torch version's TCPStore client
(is_master=False, use_libuv=False where it exists, as under an agent store):
every operation the client has, run by store_torch_ops.py in that version's
Python, and which version has what. One ctest entry per version
(MUSTER_TORCH_VERSIONS, tests/integration/torch_versions.py).
"""
import json
import os
import time

from harness import check, run, run_tests
from store_harness import StoreServerProcess
from torch_versions import each_version

OPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "store_torch_ops.py")

# The TCPStore methods beyond set/get/add/compare_set/wait/delete_key/num_keys,
# per version (Debian's builds). 2.14's queue_* exist but refuse to run
# without libuv, which Debian's torch lacks (store_torch_ops.py checks that).
HAS = {
    "1.13": [],
    "2.6": ["check", "append", "multi_get", "multi_set"],
    "2.14": ["check", "append", "multi_get", "multi_set", "list_keys", "barrier", "queue_push",
             "queue_pop", "queue_len"],
}


@each_version
def every_operation_the_client_has(version):
    server = StoreServerProcess()
    try:
        rc, out, err = run([version.python, OPS, str(server.port)], env=version.env(),
                           timeout=120)
        check(rc == 0, f"torch {version.name} client failed (rc={rc}):\n{out}\n{err}")
        result = json.loads(out.strip().splitlines()[-1])
        check(result["torch"].startswith(version.name),
              f"ran torch {result['torch']}, wanted {version.name}")
        check(result["has"] == HAS[version.name],
              f"torch {version.name} has {result['has']}, expected {HAS[version.name]}")
        # Every wait, pop and barrier was answered or cancelled.
        deadline = time.monotonic() + 10
        while server.stats()["waits"] != 0:
            check(time.monotonic() < deadline, f"waits left behind: {server.stats()}")
            time.sleep(0.05)
        warnings = [line for line in server.log().splitlines() if "[warning]" in line]
        check(not warnings, "no connection was closed for a protocol error:\n" +
              "\n".join(warnings))
    except Exception:
        print("---- store server log ----\n" + server.log(), flush=True)
        raise
    finally:
        server.stop()


if __name__ == "__main__":
    run_tests()

"""The muster package's state agreement on each real torch version: the
unit tests of python/muster/state_sync.py (tests/python/
muster_state_sync_test.py) run by that version's Python. Among them: a peer
that broadcasts a pickle whose unpickling would create a file is refused
with a clear error, and the file does not exist. One ctest entry per version
(MUSTER_TORCH_VERSIONS, tests/integration/torch_versions.py).
"""
import os

from harness import SOURCE_DIR, check, run, run_tests
from torch_versions import each_version

TESTS = os.path.join(SOURCE_DIR, "tests", "python", "muster_state_sync_test.py")


@each_version
def state_moves_as_json_and_tensors_and_a_peers_pickle_runs_no_code(version):
    code, out, err = run([version.python, TESTS, "-v"], env=version.env(), timeout=120)
    check(code == 0, f"torch {version.name}: the state agreement's tests failed (exit {code})",
          out, err)
    check(f"torch {version.name}" in out, f"ran another torch than {version.name}", out)
    check("test_a_peer_broadcasting_a_pickle_runs_no_code_on_the_receiver" in err and
          " ... ok" in err, "the malicious peer's test did not run", err)


if __name__ == "__main__":
    run_tests()

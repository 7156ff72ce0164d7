"""The layering rule of docs/architecture.md ("Layers"), checked on every
#include of the tree: a file includes only its own folder or folders of a
lower layer, never a folder of its own layer, and never one the table
forbids by name. The tables below are the document's; a change to one is a
change to the other.

Run: python3 tests/layering/layering_test.py [SOURCE_DIR]. Exits 1 naming
each include that runs back up a layer.
"""
import os
import re
import subprocess
import sys

# Longest prefix wins. Layer 6 (tests, scripts, examples) may include anything.
TREE = {
    "common/": 0,
    "control/": 1, "store/": 1, "rendezvous/protocol/": 1,
    "rendezvous/state/": 2, "rendezvous/net/": 2,
    "rendezvous/client/": 3, "rendezvous/replica/": 3,
    "rendezvous/daemon/": 4,
    "launcher/": 5, "worker_runtime/": 5,
    "tests/": 6, "scripts/": 6, "examples/": 6,
}
# Inside a folder, its own order (same rule, one level down).
INSIDE = {
    "launcher/": {
        "launcher/plan/launch_options.h": 0,
        "launcher/cli/": 1, "launcher/plan/": 2, "launcher/process/": 3,
        "launcher/output/": 4, "launcher/decide/": 4, "launcher/report/": 4,
        "launcher/agent/": 5, "launcher/main.cc": 6,
    },
    "worker_runtime/": {
        "worker_runtime/bootstrap/": 0, "worker_runtime/data/": 0,
        "worker_runtime/checkpoint/": 0, "worker_runtime/progress/": 0,
        "worker_runtime/store/": 1, "worker_runtime/control/": 1, "worker_runtime/fault/": 1,
        "worker_runtime/comm/": 2, "worker_runtime/recovery/": 3, "worker_runtime/train/": 4,
    },
}
# Includes the table forbids although the layers would allow them.
FORBIDDEN = [
    ("rendezvous/daemon/", "rendezvous/client/"),
    ("worker_runtime/", "launcher/"),
    ("worker_runtime/", "rendezvous/"),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def place(path, table):
    """(layer, the prefix that placed it) of `path` in `table`, or None."""
    best = None
    for prefix, layer in table.items():
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
            if best is None or len(prefix) > len(best[1]):
                best = (layer, prefix)
    return best


def violations(source_dir):
    files = subprocess.check_output(["git", "ls-files", "*.h", "*.cc", "*.cu"],
                                    cwd=source_dir, text=True).split()
    found = []
    for path in files:
        mine = place(path, TREE)
        if mine is None or mine[0] == 6:
            continue
        with open(os.path.join(source_dir, path), errors="replace") as f:
            lines = f.readlines()
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            theirs = place(target, TREE)
            if theirs is None:
                continue  # a header of a library, or a generated one
            where = f"{path}:{number} includes {target}"
            if theirs[0] == 6:
                found.append(f"{where}: nothing includes tests or scripts")
            elif theirs[1] == mine[1]:
                inner = INSIDE.get(mine[1])
                if inner:
                    a, b = place(path, inner), place(target, inner)
                    if a and b and a[1] != b[1] and b[0] >= a[0]:
                        found.append(f"{where}: {b[1]} is not below {a[1]} inside {mine[1]}")
            elif theirs[0] >= mine[0]:
                found.append(f"{where}: {theirs[1]} (layer {theirs[0]}) is not below "
                             f"{mine[1]} (layer {mine[0]})")
            for includer, included in FORBIDDEN:
                if path.startswith(includer) and target.startswith(included):
                    found.append(f"{where}: {includer} never includes {included}")
    return found


def main():
    source_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    found = violations(source_dir)
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} include(s) run back up a layer (docs/architecture.md, \"Layers\")")
        return 1
    print("every include goes down a layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())

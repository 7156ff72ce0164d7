"""`python -m muster ARGS...` is `muster ARGS...`, as `python -m
torch.distributed.run` is torchrun: it replaces this interpreter with the
muster binary that belongs to this package.

Which binary, the first found:
- $MUSTER_BIN, when set;
- the source tree's build: <source>/build/bin/muster beside <source>/python;
- an installed one beside the package's prefix (<prefix>/bin/muster for
  <prefix>/lib/python3/dist-packages/muster, as the .deb and
  `cmake --install` lay them out);
- `muster` on PATH.
"""
import os
import shutil
import sys


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.environ.get("MUSTER_BIN")
    yield os.path.join(here, "..", "..", "build", "bin", "muster")
    yield os.path.join(here, "..", "..", "..", "..", "bin", "muster")
    yield shutil.which("muster")


def find_muster():
    for candidate in _candidates():
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    return None


def main():
    binary = find_muster()
    if binary is None:
        sys.stderr.write("python -m muster: no muster binary found (set MUSTER_BIN, or put muster "
                         "on PATH)\n")
        return 127
    # The workers' interpreter is this one unless the user chose another.
    os.environ.setdefault("MUSTER_PYTHON", sys.executable)
    os.execv(binary, [binary] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

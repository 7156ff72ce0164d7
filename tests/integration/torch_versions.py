"""The real PyTorch versions the integration tests run workers and clients on.

    1.13  Debian bookworm's python3-torch, /usr/bin/python3 on this host
    2.6   Debian trixie's, in a chroot built by scripts/torch_chroots.sh
    2.14  Debian sid's, in a chroot built by scripts/torch_chroots.sh

A chroot version runs through tests/torch/chroot_python.sh, which behaves as a
Python interpreter (paths under the source tree and /tmp mean the same inside
and out) and applies the one documented change to Debian's torch 2.x
(tests/torch/no_libuv.py). Pass `version.python` wherever a Python path is
taken (MUSTER_PYTHON, --python, the first element of a command).

Tests that must hold on every version are written once and registered per
version with @each_version: `def t(version)` becomes t[1.13], t[2.6] and
t[2.14]. A ctest entry runs the versions named in MUSTER_TORCH_VERSIONS
(comma-separated; all by default). A chroot version is skipped, with the
reason printed, when not root or when its chroot has not been built.
"""
import os
from dataclasses import dataclass

from harness import PYTHON, Skip, base_env, test
from testlib.torch_refs import CHROOT_PYTHON, CHROOTS


@dataclass(frozen=True)
class TorchVersion:
    name: str           # "1.13", "2.6", "2.14"
    chroot: str | None  # the chroot's directory, None for the host's torch

    @property
    def python(self):
        return CHROOT_PYTHON if self.chroot else PYTHON

    @property
    def at_least_2_6(self):
        return self.key >= (2, 6)

    @property
    def key(self):
        return tuple(int(p) for p in self.name.split("."))

    def skip_reason(self):
        """Why this version cannot run here, or None."""
        if not self.chroot:
            return None
        if os.geteuid() != 0:
            return f"torch {self.name} runs in a chroot, which needs root"
        if not os.path.isfile(os.path.join(self.chroot, ".muster-torch-version")):
            return (f"torch {self.name}: no chroot at {self.chroot} "
                    "(scripts/torch_chroots.sh builds it; scripts/test.sh runs that as root)")
        return None

    def require(self):
        reason = self.skip_reason()
        if reason:
            raise Skip(reason)

    def env(self, **extra):
        """The harness's base environment with this version's Python for muster."""
        env = base_env(MUSTER_PYTHON=self.python, **extra)
        if self.chroot:
            env["MUSTER_TORCH_CHROOT"] = self.chroot
        return env

    def installed_version(self):
        """The torch version string recorded when the chroot was built."""
        if not self.chroot:
            return "1.13 (host)"
        with open(os.path.join(self.chroot, ".muster-torch-version")) as f:
            return f.read().strip()


ALL = [
    TorchVersion("1.13", None),
    TorchVersion("2.6", os.path.join(CHROOTS, "trixie")),
    TorchVersion("2.14", os.path.join(CHROOTS, "sid")),
]


def selected():
    names = os.environ.get("MUSTER_TORCH_VERSIONS", "")
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in {v.name for v in ALL}]
    if unknown:
        raise SystemExit(f"MUSTER_TORCH_VERSIONS: unknown version(s) {unknown}; "
                         f"known: {[v.name for v in ALL]}")
    return [v for v in ALL if not wanted or v.name in wanted]


def each_version(fn=None, *, since=None):
    """Registers fn(version) once per selected version (from `since`, e.g. "2.8")."""
    def register(fn):
        floor = tuple(int(p) for p in since.split(".")) if since else (0,)
        for version in selected():
            def run(version=version):
                version.require()
                if version.key < floor:
                    raise Skip(f"torch {version.name} has no such feature (since {since})")
                fn(version)
            run.__name__ = f"{fn.__name__}[{version.name}]"
            test(run)
        return fn
    return register(fn) if fn else register

"""The torch installations the tests and benchmarks run against, and the torchrun
references the benchmarks run beside muster, in the same run (and the paths they share:
MUSTER, PYTHON, ROOT): Debian's torch 1.13 on this host (/usr/bin/python3), and torch 2.6
and 2.14 from the Debian trixie and sid chroots that scripts/torch_chroots.sh builds under
CHROOTS (root only), entered through CHROOT_PYTHON.

    add_reference_args(parser)             --torchrun 1.13,2.14 and --torch-chroot DIR
    versions = selected_versions(parser, args)
    reason = chroot_unavailable_reason(args.torch_chroot)   # None: 2.14 can run
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
COMPAT = os.path.join(ROOT, "scripts", "bench", "torchrun_compat.py")
NO_LIBUV = os.path.join(ROOT, "tests", "torch", "no_libuv.py")
CHROOT_PYTHON = os.path.join(ROOT, "tests", "torch", "chroot_python.sh")
MUSTER = os.path.join(os.environ.get("MUSTER_BIN_DIR", os.path.join(ROOT, "build", "bin")), "muster")
PYTHON = "/usr/bin/python3"  # Debian's interpreter, the one with torch 1.13
CHROOTS = os.environ.get("MUSTER_TORCH_CHROOTS", "/var/cache/muster/torch-chroots")
DEFAULT_CHROOT = os.path.join(CHROOTS, "sid")
VERSIONS = ("1.13", "2.14")


def add_reference_args(parser):
    parser.add_argument("--torchrun", default=",".join(VERSIONS),
                        help="torchrun versions to compare with, comma-separated (default 1.13,2.14)")
    parser.add_argument("--torch-chroot", default=os.environ.get("MUSTER_TORCH_CHROOT", DEFAULT_CHROOT),
                        help=f"the torch 2.14 chroot (default $MUSTER_TORCH_CHROOT or {DEFAULT_CHROOT})")


def selected_versions(parser, args):
    """The versions --torchrun names, in order; an unknown one is a usage error.
    Also makes args.torch_chroot absolute."""
    args.torch_chroot = os.path.abspath(args.torch_chroot)
    versions = [v.strip() for v in args.torchrun.split(",") if v.strip()]
    for v in versions:
        if v not in VERSIONS:
            parser.error(f"--torchrun: unknown version '{v}' (known: {', '.join(VERSIONS)})")
    return versions


def chroot_unavailable_reason(chroot):
    """Why torchrun 2.14 cannot run from `chroot` here, or None."""
    if os.geteuid() != 0:
        return "needs root (unshare, mount, chroot)"
    if not os.access(os.path.join(chroot, "usr", "bin", "python3"), os.X_OK):
        return f"no chroot at {chroot} (scripts/torch_chroots.sh builds it)"
    return None

"""Debian's torchrun as a reference: torch 1.13 on this host, torch 2.x in a chroot.

    /usr/bin/python3 torchrun_compat.py TORCHRUN_ARGS...              (torch 1.13)
    MUSTER_TORCH_CHROOT=DIR \\
        tests/torch/chroot_python.sh torchrun_compat.py TORCHRUN_ARGS...  (torch 2.x)

Each change below is needed for Debian's build to start workers at all; torchrun's
own main() then runs unchanged.

torch 1.13: Std.from_str returns None for "0" on Python 3.11 (IntFlag iteration
skips the zero member), so torchrun fails before starting workers. None is
mapped back to Std.NONE.

torch 2.x: Debian builds torch without libuv, but TCPStore's use_libuv defaults
to True; tests/torch/no_libuv.py, run first by chroot_python.sh, changes that
one default (see there).
"""
import sys

from torch.distributed.elastic.multiprocessing import api

_original_from_str = api.Std.from_str


def _from_str(vm):
    result = _original_from_str(vm)
    if result is None:
        return api.Std.NONE
    if isinstance(result, dict):
        return {k: (api.Std.NONE if v is None else v) for k, v in result.items()}
    return result


api.Std.from_str = staticmethod(_from_str)

from torch.distributed.run import main  # noqa: E402  (after the patch, on purpose)

if __name__ == "__main__":
    sys.argv[0] = "torchrun"
    main()

"""Debian's torchrun (torch 1.13) as a reference, made to run on Python 3.11.

torch 1.13's Std.from_str returns None for "0" on Python 3.11 (IntFlag
iteration skips the zero member), so torchrun fails before starting workers.
This maps None back to Std.NONE and then runs torchrun's own main() unchanged.
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

"""muster's Python side: in-place recovery for PyTorch data-parallel scripts.

`muster.InPlace` (in_place.py) is the API; `muster.control` and
`muster.session` speak muster's agent<->worker control channel with the
standard library alone (control/PROTOCOL.md). Importing the package does
not import torch: `InPlace` loads it on first use.
"""
from muster.control import PROTOCOL_VERSION  # noqa: F401 (standard library only)

__version__ = "0.1.0"

__all__ = ["InPlace", "ShardedInPlace", "StateTransferError", "is_collective_error",
           "__version__"]


def __getattr__(name):
    if name in ("InPlace", "is_collective_error"):
        from muster import in_place
        return getattr(in_place, name)
    if name == "ShardedInPlace":
        from muster import sharded
        return sharded.ShardedInPlace
    if name == "StateTransferError":
        from muster import state_sync
        return state_sync.StateTransferError
    raise AttributeError(f"module 'muster' has no attribute {name!r}")

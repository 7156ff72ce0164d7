"""Runs a script or module under Debian's torch 2.x with one default changed.

    python3 no_libuv.py SCRIPT ARGS... | -m MODULE ARGS... | -c CODE ARGS...

Debian builds torch 2.x without libuv, yet `TCPStore`'s `use_libuv` defaults
to True: the agent-store branch of `torch/distributed/rendezvous.py`
(`_create_c10d_store`) and torchrun's own stores (the dynamic rendezvous's
shared store server, `torch/distributed/elastic/utils/distributed.py`) then
fail with "use_libuv was requested but PyTorch was built without libuv
support", so neither a worker under an agent nor Debian's torchrun 2.x can
start. This wrapper changes that one default and nothing else:
  - `torch.distributed.TCPStore`, and the name in the modules that imported
    it, become a subclass whose `use_libuv` defaults to False (a caller that
    passes it keeps its value; isinstance checks still hold);
  - `USE_LIBUV`, torch's own switch for the stores that read it, defaults to 0.
Under torch 1.13 (no libuv option) it only runs the script.
"""
import importlib
import os
import runpy
import sys

_MODULES_NAMING_TCPSTORE = (
    "torch.distributed.rendezvous",
    "torch.distributed.elastic.utils.distributed",
    "torch.distributed.elastic.rendezvous.c10d_rendezvous_backend",
    "torch.distributed.elastic.rendezvous.dynamic_rendezvous",
    "torch.distributed.elastic.rendezvous.static_tcp_rendezvous",
)


def _default_no_libuv():
    os.environ.setdefault("USE_LIBUV", "0")
    import torch.distributed as dist

    original = getattr(dist, "TCPStore", None)
    if original is None:
        return

    class TCPStore(original):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    dist.TCPStore = TCPStore
    # `torch.distributed.rendezvous` the attribute is a function; the module
    # is only reachable through sys.modules / importlib.
    for name in _MODULES_NAMING_TCPSTORE:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "TCPStore", None) is original:
            module.TCPStore = TCPStore


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: no_libuv.py SCRIPT ARGS... | -m MODULE ARGS... | -c CODE ARGS...")
    import torch

    if tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 0):
        _default_no_libuv()
    if sys.argv[1] == "-c":
        code = sys.argv[2]
        sys.argv = ["-c"] + sys.argv[3:]
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
    elif sys.argv[1] == "-m":
        module = sys.argv[2]
        sys.argv = [module] + sys.argv[3:]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        script = sys.argv[1]
        sys.argv = sys.argv[1:]
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()

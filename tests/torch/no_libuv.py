"""Runs a script or module under Debian's torch 2.x with one default changed.

    python3 no_libuv.py SCRIPT ARGS... | -m MODULE ARGS... | -c CODE ARGS...

Debian builds torch 2.x without libuv, yet the agent-store branch of
`torch/distributed/rendezvous.py` (`_create_c10d_store`) constructs
`TCPStore(...)` without `use_libuv`, whose default is True: every
`init_process_group` under an agent (torchrun's or muster's) fails with
"use_libuv was requested but PyTorch was built without libuv support". The
same holds for torchrun's own stores. This wrapper makes `use_libuv` default
to False for the TCPStore that torch's rendezvous and elastic modules create,
and changes nothing else: a caller that passes use_libuv keeps its value.
Under torch 1.13 (no libuv option) it only runs the script.
"""
import importlib
import os
import runpy
import sys


def _default_no_libuv():
    import torch.distributed as dist

    original = getattr(dist, "TCPStore", None)
    if original is None:
        return

    def tcp_store(*args, **kwargs):
        kwargs.setdefault("use_libuv", False)
        return original(*args, **kwargs)

    # `torch.distributed.rendezvous` the attribute is a function; the module
    # is only reachable through sys.modules.
    for name in ("torch.distributed.rendezvous", "torch.distributed.elastic.utils.distributed",
                 "torch.distributed.elastic.rendezvous.c10d_rendezvous_backend",
                 "torch.distributed.elastic.rendezvous.static_tcp_rendezvous"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "TCPStore", None) is original:
            module.TCPStore = tcp_store


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

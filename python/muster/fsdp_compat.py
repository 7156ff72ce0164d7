"""What FSDP2 (`fully_shard`) needs to run on the CPU with gloo on torch 2.6,
applied once, only where that torch lacks it (2.14 needs nothing):

- `torch.cpu.Stream` has no `record_event`/`wait_event` in 2.6, which
  FSDP2's all-gather calls on any device. On the CPU every operation is
  synchronous, so an event that is already complete is exact.
- FSDP2 2.6 reduce-scatters (and, for HSDP, all-reduces) gradients with
  ReduceOp.AVG for float32/bfloat16, which gloo refuses. On a gloo group the
  gradient is summed and then divided by the data-parallel size instead:
  the same average.
"""
import inspect

import torch
import torch.distributed as dist

_applied = False


def apply():
    global _applied
    if _applied:
        return
    _applied = True
    cpu = torch.cpu
    if not hasattr(cpu.Stream, "record_event"):
        cpu.Stream.record_event = lambda self, event=None: cpu.Event()
        cpu.Stream.wait_event = lambda self, event: None
    try:
        from torch.distributed.fsdp._fully_shard import _fsdp_collectives as collectives
    except ImportError:  # torch < 2.6: no FSDP2 at this path
        return
    factors = getattr(collectives, "_get_gradient_divide_factors", None)
    reduce = getattr(collectives, "foreach_reduce", None)
    if factors is None or reduce is None or \
            "reduce_scatter_reduce_op = ReduceOp.AVG" not in inspect.getsource(reduce):
        return  # not 2.6's choice of AVG (newer torch sums on gloo itself)

    def divide_factors(reduce_scatter_group, all_reduce_group, *args, **kwargs):
        if dist.get_backend(reduce_scatter_group) == "gloo":
            size = reduce_scatter_group.size()
            if all_reduce_group is not None:
                size *= all_reduce_group.size()
            return 1.0, float(size)  # sum, then divide once
        return factors(reduce_scatter_group, all_reduce_group, *args, **kwargs)

    collectives._get_gradient_divide_factors = divide_factors

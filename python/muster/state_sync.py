"""The state agreement of a generation formed in place: every rank ends with
the state of the rank that completed the most steps, so a process started
into the generation reads no checkpoint and a survivor redoes no step.

Contract: `agree_on_state(step, module, optimizer, extra, device)` is a
collective of the default process group. It gathers every rank's completed
step count; when they all agree it returns (step, -1) and moves nothing
(a fresh start, or survivors of one generation, whose states DDP keeps
equal). Otherwise the lowest rank with the most steps is the source: the
module's parameters and buffers are broadcast into place, tensor by tensor;
the optimizer's state_dict and the `extra` dict travel pickled (torch.save)
and are loaded into the optimizer and `extra` (updated in place). Returns
(the source's step, the source rank).
"""
import io

import torch
import torch.distributed as dist


def _gather_steps(step, device):
    mine = torch.tensor([step], dtype=torch.int64, device=device)
    every = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    return [int(t.item()) for t in every]


def _broadcast_bytes(payload, source, device):
    """`payload` (bytes, on the source) on every rank."""
    size = torch.tensor([len(payload) if payload is not None else 0], dtype=torch.int64,
                        device=device)
    dist.broadcast(size, source)
    if dist.get_rank() == source:
        data = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(device)
    else:
        data = torch.empty(int(size.item()), dtype=torch.uint8, device=device)
    dist.broadcast(data, source)
    return data.cpu().numpy().tobytes()


def agree_on_state(step, module, optimizer, extra, device):
    steps = _gather_steps(step, device)
    top = max(steps)
    if all(s == top for s in steps):
        return top, -1
    source = steps.index(top)
    with torch.no_grad():
        for tensor in module.state_dict().values():
            if isinstance(tensor, torch.Tensor):
                dist.broadcast(tensor, source)
    payload = None
    if dist.get_rank() == source:
        buffer = io.BytesIO()
        torch.save({"optimizer": optimizer.state_dict() if optimizer is not None else None,
                    "extra": dict(extra)}, buffer)
        payload = buffer.getvalue()
    received = _broadcast_bytes(payload, source, device)
    if dist.get_rank() != source:
        # The source is a rank of this job: its pickles are trusted as a
        # checkpoint written by the job would be.
        state = torch.load(io.BytesIO(received), map_location="cpu", weights_only=False)
        if optimizer is not None and state["optimizer"] is not None:
            optimizer.load_state_dict(state["optimizer"])
        extra.clear()
        extra.update(state["extra"])
    return top, source

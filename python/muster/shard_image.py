"""One rank's shard as it moves: its parameters' local shards, its
optimizer's state (local shards of DTensors) and the job's small `state`,
as a header and a list of tensors, laid out end to end in one flat byte
range (`Layout`), moved between two ranks by point-to-point sends in
segments, and installed into a freshly built model and optimizer.

Contract:
- `capture(model, optimizer, state)` -> (header bytes, tensors): the header
  is state_sync's JSON form (no pickle; the same refusals) of
  {"params": [...], "optimizer": state_dict or None} and `state`; tensors
  are the parameters' local shards in `named_parameters()` order, then the
  optimizer's. Nothing is copied.
- `Layout(sizes)`: every tensor's offset in the flat range (aligned to
  ALIGN bytes, so a dtype view of a flat buffer is legal), and the
  segments that move it: a tensor of BUCKET_BYTES or more in pieces of at
  most SEGMENT_BYTES, smaller ones packed together up to BUCKET_BYTES. Both
  sides compute it from the header.
- `send(header, tensors, flat, dst)` / `receive(src, params)`: a header's
  size, the header, then the segments, each an isend/irecv (a rank may
  send and receive in one exchange without deadlock: `Exchange`). A
  sender sends views of its tensors, or of `flat` when it has one (a
  snapshot); only a packed segment of a live sender is copied (at most
  BUCKET_BYTES at a time). A receiver receives the parameters' segments
  into the given parameter shards (the new model's) and the optimizer's
  into one buffer of their size; only a packed segment is staged.
- `install(image, model, optimizer, state, clone)`: copies the parameters
  in (unless received there), loads the optimizer's state with each local
  shard wrapped as a DTensor like its parameter (no copy unless `clone`:
  a snapshot's buffer is reused), and replaces `state`'s items.

Errors: StateTransferError for a header refused (state_sync.py) or a
parameter list that does not match the model (another architecture).
"""
import torch
import torch.distributed as dist

from muster.state_sync import (BUCKET_BYTES, HEADER_LIMIT, StateTransferError, decode,
                               encode_payload, load_optimizer_state, parse_header)

try:  # torch >= 2.5
    from torch.distributed.tensor import DTensor
except ImportError:
    try:  # torch 2.0-2.4
        from torch.distributed._tensor import DTensor
    except ImportError:  # torch 1.13: plain tensors only

        class DTensor:  # nothing is an instance
            pass

ALIGN = 64
SEGMENT_BYTES = 64 << 20


def local_of(tensor):
    """The local shard of a DTensor (a view), or the tensor itself."""
    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def _local_state_dict(optimizer):
    if optimizer is None:
        return None
    sd = optimizer.state_dict()
    return {"state": {index: {key: (local_of(value) if isinstance(value, torch.Tensor) else value)
                              for key, value in entry.items()}
                      for index, entry in sd["state"].items()},
            "param_groups": sd["param_groups"]}


def live_value(model, optimizer):
    """{"params": the parameters' local shards, "optimizer": its state_dict
    with local shards}: what capture encodes and install takes. No copy."""
    params = [local_of(p.detach()) for _, p in model.named_parameters()]
    return {"params": params, "optimizer": _local_state_dict(optimizer)}


def capture(model, optimizer, state):
    return encode_payload(live_value(model, optimizer), state)


class Layout:
    def __init__(self, sizes):
        self.sizes = list(sizes)
        self.offsets, end = [], 0
        for size in self.sizes:
            end = (end + ALIGN - 1) // ALIGN * ALIGN
            self.offsets.append(end)
            end += size
        self.total = end
        self.segments = []  # (start, end, [tensor index, ...])
        packed = []
        for index, size in enumerate(self.sizes):
            if size == 0:
                continue
            start = self.offsets[index]
            if size >= BUCKET_BYTES:
                self._flush(packed)
                packed = []
                for piece in range(start, start + size, SEGMENT_BYTES):
                    self.segments.append((piece, min(piece + SEGMENT_BYTES, start + size),
                                          [index]))
                continue
            if packed and start + size - self.offsets[packed[0]] > BUCKET_BYTES:
                self._flush(packed)
                packed = []
            packed.append(index)
        self._flush(packed)

    def _flush(self, packed):
        if packed:
            last = packed[-1]
            self.segments.append((self.offsets[packed[0]],
                                  self.offsets[last] + self.sizes[last], packed))


def _bytes_of(tensor):
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)


class Exchange:
    """Point-to-point operations posted together and waited for together:
    every rank posts all its sends and receives of one phase in one order,
    so a rank that both sends and receives cannot deadlock."""

    def __init__(self, group=None):
        self.group, self._works, self._keep = group, [], []

    def send(self, tensor, peer):
        self._keep.append(tensor)
        self._works.append(dist.isend(tensor, peer, group=self.group))

    def receive(self, tensor, peer):
        self._keep.append(tensor)
        self._works.append(dist.irecv(tensor, peer, group=self.group))

    def wait(self):
        works, self._works = self._works, []
        for work in works:
            work.wait()
        self._keep = []


class Outgoing:
    """What one sender sends to one receiver: header, tensors and (a
    snapshot's) flat buffer laid out by Layout."""

    def __init__(self, header, tensors, flat=None):
        self.header, self.tensors, self.flat = header, tensors, flat
        self.data = [_bytes_of(t) for t in tensors] if flat is None else None
        self.layout = Layout([t.numel() * t.element_size() for t in tensors])

    @classmethod
    def of_snapshot(cls, header, flat):
        """What a snapshot's `flat` buffer (fill_flat) sends, without a copy."""
        out = cls.__new__(cls)
        out.header, out.tensors, out.flat, out.data = header, [], flat, None
        out.layout = Layout([spec.nbytes for spec in parse_header(header).tensors])
        return out

    def post_size(self, exchange, dst):
        exchange.send(torch.tensor([len(self.header)], dtype=torch.int64), dst)

    def post_header(self, exchange, dst):
        exchange.send(torch.frombuffer(bytearray(self.header), dtype=torch.uint8), dst)

    def post_segments(self, exchange, dst):
        layout = self.layout
        for start, end, members in layout.segments:
            if self.flat is not None:
                exchange.send(self.flat[start:end], dst)
            elif len(members) == 1:
                base = layout.offsets[members[0]]
                exchange.send(self.data[members[0]][start - base:end - base], dst)
            else:
                staged = torch.empty(end - start, dtype=torch.uint8)
                for index in members:
                    at = layout.offsets[index] - start
                    staged[at:at + layout.sizes[index]].copy_(self.data[index])
                exchange.send(staged, dst)


class Incoming:
    """One image a receiver takes from `src`; its parameters land in
    `params` (the new model's local shards, in named_parameters() order)."""

    def __init__(self, src, params):
        self.src, self.params = src, params
        self.size = torch.zeros(1, dtype=torch.int64)
        self.header = None
        self.parsed = None

    def post_size(self, exchange):
        exchange.receive(self.size, self.src)

    def post_header(self, exchange):
        length = int(self.size.item())
        if not 0 < length <= HEADER_LIMIT:
            raise StateTransferError(f"rank {self.src} announced a {length}-byte shard header")
        self.header = torch.empty(length, dtype=torch.uint8)
        exchange.receive(self.header, self.src)

    def post_segments(self, exchange):
        self.parsed = parse_header(self.header.numpy().tobytes())
        specs = self.parsed.tensors
        count = len(self.params)
        if count > len(specs):
            raise StateTransferError(f"rank {self.src} sent {len(specs)} tensors for a model of "
                                     f"{count} parameters")
        for index, (spec, param) in enumerate(zip(specs, self.params)):
            if spec.nbytes != param.numel() * param.element_size():
                raise StateTransferError(
                    f"rank {self.src}'s parameter {index} has {spec.nbytes} bytes; this model's "
                    f"shard has {param.numel() * param.element_size()} (another model?)")
        layout = self.layout = Layout([spec.nbytes for spec in specs])
        first = layout.offsets[count] if count < len(specs) else layout.total
        try:
            self.flat = torch.empty(layout.total - first, dtype=torch.uint8)
        except RuntimeError as error:
            raise StateTransferError(f"rank {self.src}'s state of {layout.total} bytes cannot be "
                                     f"held here ({error})") from None
        self._first = first
        self._staged = []
        for start, end, members in layout.segments:
            if len(members) == 1:
                exchange.receive(self._target(members[0], start, end), self.src)
            else:
                staged = torch.empty(end - start, dtype=torch.uint8)
                self._staged.append((start, members, staged))
                exchange.receive(staged, self.src)

    def _target(self, index, start, end):
        if index < len(self.params):
            base = self.layout.offsets[index]
            return _bytes_of_param(self.params[index])[start - base:end - base]
        return self.flat[start - self._first:end - self._first]

    def finish(self):
        """(the {"params", "optimizer"} value, state) once every segment arrived."""
        layout = self.layout
        for start, members, staged in self._staged:
            for index in members:
                at = layout.offsets[index] - start
                self._target(index, layout.offsets[index],
                             layout.offsets[index] + layout.sizes[index]).copy_(
                    staged[at:at + layout.sizes[index]])
        tensors = []
        for index, spec in enumerate(self.parsed.tensors):
            if index < len(self.params):
                tensors.append(self.params[index])
                continue
            start = layout.offsets[index] - self._first
            tensors.append(self.flat[start:start + spec.nbytes].view(spec.dtype).reshape(spec.shape))
        return (decode(self.parsed.optimizer, tensors, "optimizer"),
                decode(self.parsed.state, tensors, "state"))


def _bytes_of_param(param):
    """A writable flat byte view of a parameter's local shard (contiguous:
    FSDP2's local shards are)."""
    if not param.is_contiguous():
        raise StateTransferError("a parameter's local shard is not contiguous")
    return param.view(-1).view(torch.uint8)


def decode_flat(header, flat):
    """(the {"params", "optimizer"} value, state) of a snapshot: `header`
    bytes and its `flat` buffer, tensors as views of it."""
    parsed = parse_header(header)
    layout = Layout([spec.nbytes for spec in parsed.tensors])
    if layout.total > flat.numel():
        raise StateTransferError(f"a snapshot of {layout.total} bytes in a buffer of "
                                 f"{flat.numel()}")
    tensors = [flat[o:o + spec.nbytes].view(spec.dtype).reshape(spec.shape)
               for o, spec in zip(layout.offsets, parsed.tensors)]
    return decode(parsed.optimizer, tensors, "optimizer"), decode(parsed.state, tensors, "state")


def fill_flat(tensors, flat):
    """Copies `tensors` into `flat` at their Layout offsets (a snapshot)."""
    layout = Layout([t.numel() * t.element_size() for t in tensors])
    for tensor, offset, size in zip(tensors, layout.offsets, layout.sizes):
        if size:
            flat[offset:offset + size].copy_(_bytes_of(tensor))
    return layout.total


def _wrap_like(value, param):
    if isinstance(param, DTensor) and not isinstance(value, DTensor) and \
            tuple(value.shape) == tuple(param.to_local().shape):
        return DTensor.from_local(value, param.device_mesh, param.placements, run_check=False,
                                  shape=param.shape, stride=param.stride())
    return value


def install(image, model, optimizer, state, clone=False):
    """Puts `image` ((value, state) from capture/receive/decode_flat) into the
    new `model`, `optimizer` and `state`."""
    value, received_state = image
    params = [p for _, p in model.named_parameters()]
    sources = value["params"]
    if len(sources) != len(params):
        raise StateTransferError(f"{len(sources)} parameters arrived for a model of {len(params)}")
    with torch.no_grad():
        for param, source in zip(params, sources):
            target = local_of(param)
            if source is not target and source.data_ptr() != target.data_ptr():
                target.copy_(source.view(target.shape))
    sd = value["optimizer"]
    if optimizer is not None and sd is not None:
        by_index = [p for group in optimizer.param_groups for p in group["params"]]
        loaded = {}
        for index, entry in sd["state"].items():
            param = by_index[int(index)]
            loaded[int(index)] = {
                key: (_wrap_like(item.clone() if clone else item, param)
                      if isinstance(item, torch.Tensor) and key != "step" else
                      (item.clone() if clone and isinstance(item, torch.Tensor) else item))
                for key, item in entry.items()}
        load_optimizer_state(optimizer, {"state": loaded, "param_groups": sd["param_groups"]})
    if received_state is not state:
        state.clear()
        state.update(received_state)


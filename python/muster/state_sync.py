"""The state agreement of a generation formed in place: every rank ends with
the state of the rank that completed the most steps, so a process started
into the generation reads no checkpoint and a survivor redoes no step.

Contract: `agree_on_state(step, module, optimizer, state, device)` is a
collective of the default process group. It gathers every rank's completed
step count; when they all agree it returns (step, -1) and moves nothing
(a fresh start, or survivors of one generation, whose states DDP keeps
equal). Otherwise the lowest rank with the most steps is the source, and
returns (the source's step, the source rank) once every rank holds its state:

- the module's parameters and buffers are broadcast into place, tensor by
  tensor;
- then the optimizer's state_dict and `state` travel as a JSON header (their
  structure, each tensor replaced by its index, and each tensor's dtype,
  shape and device) followed by the tensors' bytes (`buckets`: a large
  tensor in a broadcast of its own, small ones packed together). The
  optimizer loads what it got and `state` is replaced in place.

Nothing a peer sends is unpickled. gloo and NCCL carry whatever anyone who
reaches their ports sends (docs/security.md), so a receiver parses JSON
only, accepts only the forms encode_payload writes, and allocates tensors
of the shapes and dtypes it names (from an allow-list of torch's plain
dtypes).

What may travel (`check_transferable`): None, bool, int, float, str, bytes,
torch.Tensor (strided; it arrives detached, on the CPU when it left from
the CPU), and lists, tuples and dicts of them whose keys are None, bool,
int, float or str. Types are matched exactly: a subclass (an OrderedDict,
a numpy float), a numpy array or any other object is refused.

Errors: StateTransferError.
- At the source, a value that cannot travel names its path and type
  ("state['rng']: a numpy.ndarray cannot move between ranks; ..."). The
  source sends that message in place of its state, so every rank raises
  it ("rank 1: rank 0's state refused: the source could not send its
  state: ..."), and none waits for tensors.
- At a receiver, a header the source would not write: not UTF-8 JSON (a
  pickle, for instance), an unknown form, a tensor index out of range, a
  dtype torch does not have, a negative size, more than HEADER_LIMIT bytes
  of header, tensors this process cannot allocate.
"""
import base64
import json
import math

import torch
import torch.distributed as dist

FORMAT = "muster-state/1"
HEADER_LIMIT = 64 << 20  # bytes of JSON a receiver accepts as a header
BUCKET_BYTES = 1 << 20   # tensors smaller than this move packed together
MAX_DEPTH = 64           # nesting of lists, tuples and dicts, either way

ALLOWED = ("state may hold None, bool, int, float, str, bytes, torch.Tensor, and lists, tuples "
           "and dicts of them with None, bool, int, float or str keys")

_SCALARS = (type(None), bool, int, float, str)


class StateTransferError(Exception):
    """State that cannot move between ranks, or a peer's state refused."""


def _type_name(value):
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


# The dtypes whose tensors move as their bytes, by the name str(dtype) ends
# with: a header names one of these (that this torch has) or is refused.
_DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
                "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
                "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


_DTYPES = {name: getattr(torch, name) for name in _DTYPE_NAMES if hasattr(torch, name)}


class _Encoder:
    """Turns a value into its JSON form, collecting its tensors in order."""

    def __init__(self):
        self.tensors = []

    def encode(self, value, path, depth=0):
        if depth > MAX_DEPTH:
            raise StateTransferError(f"{path}: nested deeper than {MAX_DEPTH} levels (a cycle?)")
        kind = type(value)
        if kind in _SCALARS:
            return value
        if kind is bytes:
            return {"bytes": base64.b64encode(value).decode("ascii")}
        if isinstance(value, torch.Tensor):
            if value.layout != torch.strided or _dtype_name(value.dtype) not in _DTYPES:
                raise StateTransferError(f"{path}: a {value.layout} tensor of {value.dtype} cannot "
                                         f"move between ranks (dense tensors only)")
            self.tensors.append(value)
            return {"tensor": len(self.tensors) - 1}
        if kind is list:
            return [self.encode(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
        if kind is tuple:
            return {"tuple": [self.encode(item, f"{path}[{i}]", depth + 1)
                              for i, item in enumerate(value)]}
        if kind is dict:
            items = []
            for key, item in value.items():
                if type(key) not in _SCALARS:
                    raise StateTransferError(f"{path}: a key of type {_type_name(key)} cannot move "
                                             f"between ranks; {ALLOWED}")
                items.append([key, self.encode(item, f"{path}[{key!r}]", depth + 1)])
            return {"dict": items}
        raise StateTransferError(f"{path}: a {_type_name(value)} cannot move between ranks; "
                                 f"{ALLOWED}")


def check_transferable(state, name="state"):
    """Raises StateTransferError naming the first value of `state` that
    cannot travel (path and type); returns None otherwise."""
    _Encoder().encode(state, name)


def encode_payload(optimizer_state, state):
    """(header bytes, tensors) for the optimizer's state_dict (or None) and
    `state`. Raises StateTransferError for a value that cannot travel."""
    encoder = _Encoder()
    header = {"format": FORMAT,
              "optimizer": (None if optimizer_state is None else
                            encoder.encode(optimizer_state, "optimizer.state_dict()")),
              "state": encoder.encode(state, "state")}
    header["tensors"] = [{"dtype": _dtype_name(t.dtype), "shape": list(t.shape),
                          "device": t.device.type} for t in encoder.tensors]
    return json.dumps(header).encode(), encoder.tensors


def error_header(message):
    """The header a source sends instead of state it cannot send."""
    return json.dumps({"format": FORMAT, "error": message}).encode()


class TensorSpec:
    """One tensor a header announces: its dtype, shape, size in bytes and
    whether it left from the CPU."""

    def __init__(self, dtype, shape, on_cpu):
        self.dtype, self.shape, self.on_cpu = dtype, shape, on_cpu
        self.nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()


class Header:
    """A parsed, checked header: `tensors` (TensorSpec each), and the
    optimizer's and the state's JSON forms, every node of which is known
    to decode (see decode)."""

    def __init__(self, tensors, optimizer, state):
        self.tensors, self.optimizer, self.state = tensors, optimizer, state


def _refuse(why):
    raise StateTransferError(f"the peer's state header was refused: {why}")


def _spec_of(entry, index):
    if type(entry) is not dict or set(entry) != {"dtype", "shape", "device"}:
        _refuse(f"tensor {index} is described by {str(entry)[:80]!r}")
    dtype, shape, device = entry["dtype"], entry["shape"], entry["device"]
    if type(dtype) is not str or dtype not in _DTYPES:
        _refuse(f"tensor {index} has dtype {str(dtype)[:40]!r}, which torch does not have")
    if (type(shape) is not list or len(shape) > MAX_DEPTH or
            not all(type(n) is int and n >= 0 for n in shape)):
        _refuse(f"tensor {index} has shape {str(shape)[:80]!r}")
    if type(device) is not str:
        _refuse(f"tensor {index} has device {str(device)[:40]!r}")
    return TensorSpec(_DTYPES[dtype], shape, device == "cpu")


def parse_header(data):
    """The Header in `data` (bytes a peer sent). Raises StateTransferError
    for anything but what encode_payload writes, and with the source's own
    message for an error_header."""
    if len(data) > HEADER_LIMIT:
        _refuse(f"{len(data)} bytes, more than {HEADER_LIMIT}")
    try:
        header = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        _refuse(f"it is not JSON ({type(error).__name__}; it starts with {bytes(data[:16])!r})")
    if type(header) is not dict or header.get("format") != FORMAT:
        _refuse(f"it is not of the form {FORMAT} (it starts with {bytes(data[:40])!r})")
    if set(header) == {"format", "error"} and type(header["error"]) is str:
        raise StateTransferError(f"the source could not send its state: {header['error']}")
    if set(header) != {"format", "optimizer", "state", "tensors"}:
        _refuse(f"it has the fields {sorted(header)[:8]}")
    if type(header["tensors"]) is not list:
        _refuse("its tensor list is not a list")
    tensors = [_spec_of(entry, i) for i, entry in enumerate(header["tensors"])]
    placeholders = [None] * len(tensors)
    decode(header["optimizer"], placeholders, "optimizer")  # refuses before any tensor moves
    if type(decode(header["state"], placeholders, "state")) is not dict:
        _refuse("its state is not a dict")
    return Header(tensors, header["optimizer"], header["state"])


def decode(node, tensors, path, depth=0):
    """The value of a JSON form `node`, its tensors taken from `tensors` by
    index. Raises StateTransferError for a node encode_payload never writes."""
    if depth > MAX_DEPTH:
        _refuse(f"{path} is nested deeper than {MAX_DEPTH} levels")
    kind = type(node)
    if kind in _SCALARS:
        return node
    if kind is list:
        return [decode(item, tensors, f"{path}[{i}]", depth + 1) for i, item in enumerate(node)]
    if kind is dict and len(node) == 1:
        (form, body), = node.items()
        if form == "tuple" and type(body) is list:
            return tuple(decode(item, tensors, f"{path}[{i}]", depth + 1)
                         for i, item in enumerate(body))
        if form == "dict" and type(body) is list:
            out = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2 or type(pair[0]) not in _SCALARS:
                    _refuse(f"{path} has the entry {str(pair)[:80]!r}")
                out[pair[0]] = decode(pair[1], tensors, f"{path}[{pair[0]!r}]", depth + 1)
            return out
        if form == "tensor" and type(body) is int and 0 <= body < len(tensors):
            return tensors[body]
        if form == "bytes" and type(body) is str:
            try:
                return base64.b64decode(body, validate=True)
            except ValueError:
                _refuse(f"{path} holds bytes that are not base64")
    _refuse(f"{path} is {str(node)[:80]!r}")


# --- the collective ---------------------------------------------------------

def _gather_steps(step, device):
    mine = torch.tensor([step], dtype=torch.int64, device=device)
    every = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    return [int(t.item()) for t in every]


def _broadcast_bytes(payload, source, device):
    """`payload` (bytes, on the source) on every rank. A receiver refuses a
    size past HEADER_LIMIT before allocating it."""
    size = torch.tensor([len(payload) if payload is not None else 0], dtype=torch.int64,
                        device=device)
    dist.broadcast(size, source)
    if dist.get_rank() == source:
        data = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(device)
    else:
        length = int(size.item())
        if not 0 <= length <= HEADER_LIMIT:
            _refuse(f"{length} bytes announced, more than {HEADER_LIMIT}")
        data = torch.empty(length, dtype=torch.uint8, device=device)
    dist.broadcast(data, source)
    return data.cpu().numpy().tobytes()


def _as_bytes(tensor, device):
    """A flat uint8 view of `tensor`'s data on `device`: every dtype moves
    over gloo and NCCL as its bytes, bit for bit."""
    return tensor.detach().to(device).contiguous().reshape(-1).view(torch.uint8)


def buckets(sizes):
    """The broadcasts that move tensors of `sizes` bytes, in order, as
    (total bytes, [(tensor index, offset), ...]) each: a tensor of
    BUCKET_BYTES or more alone, smaller ones packed together up to
    BUCKET_BYTES, end to end (an optimizer's state is mostly small
    tensors, and one collective each costs more than their bytes). Empty
    tensors move in none. Both sides compute it from the header."""
    found, packed, end = [], [], 0
    for index, size in enumerate(sizes):
        if size == 0:
            continue
        if size >= BUCKET_BYTES:
            found.append((size, [(index, 0)]))
            continue
        offset = end
        if packed and offset + size > BUCKET_BYTES:
            found.append((end, packed))
            packed, offset = [], 0
        packed.append((index, offset))
        end = offset + size
    if packed:
        found.append((end, packed))
    return found


def _send(optimizer, state, source, device):
    try:
        header, tensors = encode_payload(
            optimizer.state_dict() if optimizer is not None else None, state)
    except StateTransferError as error:
        _broadcast_bytes(error_header(str(error)), source, device)
        raise
    _broadcast_bytes(header, source, device)
    data = [_as_bytes(tensor, device) for tensor in tensors]
    for total, members in buckets([d.numel() for d in data]):
        if len(members) == 1:
            dist.broadcast(data[members[0][0]], source)
            continue
        bucket = torch.empty(total, dtype=torch.uint8, device=device)
        for index, offset in members:
            bucket[offset:offset + data[index].numel()].copy_(data[index])
        dist.broadcast(bucket, source)


def _receive(source, device):
    """The optimizer's state_dict (or None) and the state the source sent."""
    try:
        header = parse_header(_broadcast_bytes(None, source, device))
    except StateTransferError as error:
        raise StateTransferError(f"rank {dist.get_rank()}: rank {source}'s state refused: "
                                 f"{error}") from None
    specs = header.tensors
    data = [torch.empty(0, dtype=torch.uint8, device=device) for _ in specs]
    for total, members in buckets([spec.nbytes for spec in specs]):
        try:
            bucket = torch.empty(total, dtype=torch.uint8, device=device)
        except RuntimeError as error:  # a size no honest source sends
            raise StateTransferError(f"rank {dist.get_rank()}: rank {source}'s state refused: "
                                     f"{total} bytes announced for one broadcast ({error})") \
                from None
        dist.broadcast(bucket, source)
        for index, offset in members:
            # A copy of its own: a tensor kept in the optimizer must not pin the bucket.
            data[index] = (bucket if len(members) == 1 else
                           bucket[offset:offset + specs[index].nbytes].clone())
    tensors = []
    for spec, raw in zip(specs, data):
        tensor = raw.view(spec.dtype).reshape(spec.shape)
        tensors.append(tensor.cpu() if spec.on_cpu else tensor)
    return decode(header.optimizer, tensors, "optimizer"), decode(header.state, tensors, "state")


def load_optimizer_state(optimizer, optimizer_state):
    """optimizer.load_state_dict without its copy of every tensor (torch 1.13
    deep-copies the whole dict; the state just received is this process's
    own): the groups' settings are loaded, then each parameter's state is
    put in place, cast to its parameter's device (and, but for `step`, to
    a floating parameter's dtype) as load_state_dict would."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    optimizer.load_state_dict({"state": {}, "param_groups": optimizer_state["param_groups"]})
    for index, entry in optimizer_state["state"].items():
        index = int(index)
        if not 0 <= index < len(params):
            raise StateTransferError(f"optimizer state for parameter {index} of {len(params)}")
        param = params[index]
        placed = {}
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                if key != "step" and param.is_floating_point():
                    value = value.to(dtype=param.dtype, device=param.device)
                elif value.device != param.device and key != "step":
                    value = value.to(param.device)
            placed[key] = value
        optimizer.state[param] = placed


def agree_on_state(step, module, optimizer, state, device):
    steps = _gather_steps(step, device)
    top = max(steps)
    if all(s == top for s in steps):
        return top, -1
    source = steps.index(top)
    with torch.no_grad():
        for tensor in module.state_dict().values():
            if isinstance(tensor, torch.Tensor):
                dist.broadcast(tensor, source)
    if dist.get_rank() == source:
        _send(optimizer, state, source, device)
        return top, source
    optimizer_state, received = _receive(source, device)
    if optimizer is not None and optimizer_state is not None:
        load_optimizer_state(optimizer, optimizer_state)
    state.clear()
    state.update(received)
    return top, source

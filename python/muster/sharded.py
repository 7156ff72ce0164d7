"""ShardedInPlace: in-place recovery for FSDP2 (`fully_shard`) and HSDP
scripts. The mesh is rebuilt for every generation, so the script gives a
function that builds its sharded model and optimizer on a mesh:

    def build(mesh):
        model = Net()
        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model, torch.optim.AdamW(model.parameters())

    job = muster.ShardedInPlace(build, shard=2, step=start)  # HSDP: replicas of 2 shards
    for step in job.steps(total):
        with job.guard():
            loss = loss_fn(job.model(x_of(step)), y_of(step))
            job.optimizer.zero_grad()
            loss.backward()
            job.optimizer.step()
    job.close()

Contract (the rest is InPlace's: steps, guard, run, close, rank, exit 75):
- The mesh is (replicate R, shard S) with mesh_dim_names ("replicate",
  "shard") when R > 1 (HSDP), or (S,) named ("shard",) when R == 1 (FSDP);
  S is `shard` (default: the world size), R = world size / S. Rank r
  holds shard r % S.
- At every generation, `build(mesh)` makes a new model and optimizer; then
  the ranks agree (shard_plan.py) on the step T every shard is available
  at, and each rank's shard comes from its own live state, its own
  snapshot, or a transfer from a rank that has it at T: a replica in
  another replica group (HSDP), or the ring neighbour's copy (peer_copy.py).
  Only the shards a rank needs move, as tensors (shard_image.py). The
  process, and the survivors' state, stay; `job.model` and
  `job.optimizer` are the new objects (always use them in the loop).
- Peer copy (`peer_copy`): on by default when there are no replicas
  (R == 1, world > 1), off otherwise; `peer_copy_budget` bytes (default:
  half the host memory available at the start) bound its 4 copies of this
  rank's shard.
- A world size change keeps S: replicas come and go (a node of an HSDP
  job lost for good, or one joining). A world that S does not divide, or
  state sharded another way, or a shard held nowhere at a common step,
  cannot recover in place: rank 0 says why in one line
  (`event=in_place_impossible reason=...`) and every rank exits 75 for
  muster's restart (from the script's checkpoint).
- Under torchrun or `--recovery restart`, the first mesh is built from
  torchrun's group and nothing else of this runs.
"""
import torch
import torch.distributed as dist

from muster import fsdp_compat
from muster.in_place import InPlace
from muster.peer_copy import PeerCopy
from muster.session import RecoveryExit, log
from muster.shard_image import (Exchange, Incoming, Outgoing, capture, install, live_value,
                                 local_of)
from muster.shard_plan import HELD, LIVE, SNAPSHOT, NoPlan, Offer, from_row, plan, to_row
from muster.state_sync import check_transferable


def _available_memory():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _mesh(device_type, replicate, shard):
    from torch.distributed.device_mesh import init_device_mesh
    if replicate == 1:
        return init_device_mesh(device_type, (shard,), mesh_dim_names=("shard",))
    return init_device_mesh(device_type, (replicate, shard), mesh_dim_names=("replicate", "shard"))


class ShardedInPlace(InPlace):
    _wrap_phase = "model"

    def __init__(self, build, *, shard: int = None, state=None, step: int = 0,
                 backend: str = None, timeout: float = 60.0, peer_copy: bool = None,
                 peer_copy_budget: int = None):
        """`build(mesh)` -> (model, optimizer): the sharded model and its
        optimizer on `mesh`, the same on every call but for the mesh;
        `shard`: the size of the shard dimension (default: every rank);
        `state`, `step`, `timeout`: as InPlace's; `backend`: nccl when CUDA
        is available, gloo otherwise."""
        if not callable(build):
            raise TypeError(f"build must be a function of the mesh, not a {type(build).__name__}")
        if shard is not None and (type(shard) is not int or shard < 1):
            raise ValueError(f"shard={shard!r}: the shard dimension's size is a positive integer")
        self._build = build
        self._shard = shard
        self._peer_copy_wanted = peer_copy
        self.module = None
        self.optimizer = None
        self.state = {} if state is None else state
        check_transferable(self.state)
        self.step = int(step)
        self._start = int(step)
        self._have_state = False   # this process's model holds the job's state
        self._state_shards = -1    # the shard count of that state's layout
        self._state_shard = -1     # the shard it holds
        self._built_now = False
        self._copy_group = None
        self._peer = PeerCopy(peer_copy_budget if peer_copy_budget is not None else
                              _available_memory() // 2)
        if backend is None:
            backend = "nccl" if torch.cuda.is_available() else "gloo"
        self._device = (torch.device("cuda", torch.cuda.current_device()) if backend == "nccl"
                        else torch.device("cpu"))
        if self._device.type == "cpu":
            fsdp_compat.apply()
        self._use_ddp = False
        self._ddp_kwargs = {}
        self._begin(backend, timeout)

    # --- layout ------------------------------------------------------------------
    def _layout(self):
        shard = self._shard or self.world_size
        if self.world_size % shard:
            return None, shard
        return self.world_size // shard, shard

    def _build_on_mesh(self):
        replicate, shard = self._layout()
        if replicate is None:
            self._impossible(f"a world of {self.world_size} ranks does not split into shards of "
                             f"{shard}")
        mesh = self._group.extend(lambda: _mesh(self._device.type, replicate, shard))
        model, optimizer = self._build(mesh)
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"build(mesh) returned a {type(model).__name__} as its model")
        self.mesh = mesh
        return model, optimizer, replicate, shard

    def _impossible(self, reason):
        if self.rank == 0:
            log(f"event=in_place_impossible step={self.step} world_size={self.world_size} "
                f"reason=\"{reason}\"")
        raise RecoveryExit(f"cannot recover in place: {reason}")

    def _wrap(self):
        if not self._built_now:  # torchrun's group (not in place): the first mesh
            self.module, self.optimizer, _, _ = self._build_on_mesh()
            self._watch_optimizer(self.optimizer)
        self._built_now = False
        return self.module

    # --- a generation's state ------------------------------------------------------
    def _offer(self):
        snapshots, held = self._peer.offer_parts(self._state_shard)
        return Offer(shard=self._state_shard if self._have_state else -1,
                     shards=self._state_shards if self._have_state else -1,
                     live=self.step if self._have_state else -1,
                     snapshots=snapshots if self._have_state else (),
                     held=held, start=self._start)

    def _gather_offers(self):
        mine = torch.tensor(to_row(self._offer()), dtype=torch.int64, device=self._device)
        every = [torch.zeros_like(mine) for _ in range(self.world_size)]
        dist.all_gather(every, mine)
        return [from_row(row.cpu().tolist()) for row in every]

    def _agree(self):
        old_model, old_optimizer = self.module, self.optimizer
        offers = self._gather_offers()
        model, optimizer, replicate, shard = self._build_on_mesh()
        decided = plan(offers, shard)
        if isinstance(decided, NoPlan):
            self._impossible(decided.reason)
        me = self.rank
        source = decided.sources[me]
        new_params = [local_of(p.detach()) for _, p in model.named_parameters()]
        outgoing = {}

        def outgoing_of(kind):
            if kind not in outgoing:
                if kind == LIVE:
                    outgoing[kind] = Outgoing(*capture(old_model, old_optimizer, self.state))
                elif kind == SNAPSHOT:
                    outgoing[kind] = self._peer.snapshot_outgoing(decided.step)
                else:
                    outgoing[kind] = self._peer.held_outgoing()
            return outgoing[kind]

        incoming = Incoming(source.rank, new_params) if source.rank != me else None
        for phase in ("size", "header", "segments"):
            exchange = Exchange()
            for receiver, kind in decided.sends[me]:
                getattr(outgoing_of(kind), f"post_{phase}")(exchange, receiver)
            if incoming is not None:
                getattr(incoming, f"post_{phase}")(exchange)
            exchange.wait()
        if incoming is not None:
            install(incoming.finish(), model, optimizer, self.state)
        elif source.kind == LIVE and self._have_state:
            install((live_value(old_model, old_optimizer), self.state), model, optimizer,
                    self.state)
        elif source.kind == SNAPSHOT:
            install(self._peer.snapshot_image(decided.step), model, optimizer, self.state,
                    clone=True)
        elif source.kind == HELD:
            install(self._peer.held_image(), model, optimizer, self.state, clone=True)
        # else: the first generation, every rank keeps what it built
        outgoing.clear()  # the old model and optimizer go with the last references
        old_model = old_optimizer = None
        self._peer.forget_after(decided.step)  # an abandoned timeline's
        self.module, self.optimizer = model, optimizer
        self._watch_optimizer(optimizer)
        self._have_state, self._state_shards, self._state_shard = True, shard, me % shard
        self._built_now = True
        self._start_peer_copy(replicate)
        return decided.step, source.rank

    def _start_peer_copy(self, replicate):
        wanted = self._peer_copy_wanted
        if wanted is None:
            wanted = replicate == 1 and self.world_size > 1
        if not wanted or not self._session.in_place:
            return
        self._copy_group = self._group.extend(lambda: dist.new_group(backend="gloo"))
        self._peer.start(self._copy_group, self.rank, self.world_size)

    def _after_step(self):
        if self._copy_group is None:
            return
        shard = self._state_shard
        self._peer.after_step(self.step, shard,
                              lambda: capture(self.module, self.optimizer, self.state))

    def _leave(self, pause):
        # A step that failed between forward and backward leaves FSDP's
        # parameters unsharded (full tensors in the module): back to the
        # shards, which the optimizer last wrote (no collective).
        _reshard(self.module)
        # The exchange in flight ends before its group goes: interrupted, it
        # fails at once where a peer is gone, or completes.
        if self._copy_group is not None:
            try:
                self._group.interrupt()
            except Exception as error:  # noqa: BLE001 (the base class handles a stuck abort)
                log(f"interrupting before the peer copy settles: {error}")
            self._peer.settle()
            self._copy_group = None
        super()._leave(pause)

    def close(self):
        peer = self._peer
        if peer.copies and self.rank == 0:
            log(f"rank 0: peer copy: {peer.copies} copies of {peer.copy_bytes} bytes, "
                f"{1000 * peer.copy_seconds / peer.copies:.2f} ms per step on the steps' path "
                f"(copy {1000 * peer.fill_seconds / peer.copies:.2f} ms, wait for the previous "
                f"exchange {1000 * (peer.copy_seconds - peer.fill_seconds) / peer.copies:.2f} ms)")
        super().close()



def _reshard(model):
    if model is None:
        return
    for module in model.modules():
        reshard = getattr(module, "reshard", None)
        if callable(reshard) and type(module).__name__.startswith("FSDP"):
            reshard()

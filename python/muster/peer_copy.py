"""A copy of every rank's shard in its ring neighbour's host memory, made
after each step off the step's path, so that a sharded job without
replicas can still recover a lost rank in place (Gemini, SOSP'23).

Contract:
- `after_step(step, capture)` (main thread, at a step's end): waits for the
  previous exchange (the only wait on the step's path, zero when the
  exchange took less than a step), then copies this rank's shard
  (`capture()`: header, tensors) into one of its two snapshot buffers and
  starts the next exchange on a thread: the snapshot goes to rank+1 and
  rank-1's comes in, over a process group of its own.
- Snapshots rotate through two buffers: while snapshot C is on the way,
  this rank still has C-1, which its neighbour committed. A received
  snapshot is committed once it arrived whole. So at any time the held
  copy's step is one of the two steps its owner still has, and shard_plan
  can find a step every shard has.
- `offer_parts()` -> (snapshot steps, held (shard, step) or None).
  `settle()` first, after the group was interrupted: the exchange in
  flight ends (committed if whole, dropped otherwise).
- `snapshot_image(step)` / `held_image()`: (value, state) views of a
  buffer (shard_image.decode_flat); `snapshot_outgoing` / `held_outgoing`:
  shard_image.Outgoing over it, to send without a copy.
- Memory: 4 buffers of this rank's shard size in host memory (2 own, 2 of
  the neighbour's). `budget_bytes` bounds them: past it the copy is off,
  with one line saying so, and a lost shard means a restart.
- The copy group is rebuilt for every generation (`start(group)`).

Thread-safety: the main thread calls everything; one exchange thread at
a time touches the buffers it was given.
"""
import threading
import time

import torch
import torch.distributed as dist

from muster.session import log
from muster.shard_image import Layout, Outgoing, decode_flat, fill_flat


class _Buffer:
    def __init__(self):
        self.flat = torch.empty(0, dtype=torch.uint8)
        self.header = b""
        self.step = -1
        self.shard = -1

    def ensure(self, total):
        if self.flat.numel() < total:
            self.flat = torch.empty(total, dtype=torch.uint8)


class PeerCopy:
    def __init__(self, budget_bytes):
        self.budget_bytes = budget_bytes
        self.off_reason = None
        self._own = [_Buffer(), _Buffer()]   # [acked, in flight]
        self._held = [_Buffer(), _Buffer()]  # [committed, incoming]
        self._thread = None
        self._result = None                 # None, or the exception the exchange ended with
        self._group = None
        self._rank = self._world = 0
        self.copy_seconds = 0.0             # time spent on the step's path (copy + wait)
        self.fill_seconds = 0.0             # of which copying into the snapshot
        self.copy_bytes = 0                 # the last snapshot's size
        self.copies = 0

    # --- per generation ------------------------------------------------------
    def start(self, group, rank, world):
        """Copies go through `group` (of this generation) from now on. A held
        copy of another layout's neighbour is dropped."""
        self._group, self._rank, self._world = group, rank, world


    def forget_after(self, step):
        """Drops copies of steps after `step` (the job resumed at `step`)."""
        for buffer in self._own + self._held:
            if buffer.step > step:
                buffer.step = buffer.shard = -1

    # --- the step's end -------------------------------------------------------
    def after_step(self, step, shard, capture):
        if self._group is None or self.off_reason is not None or self._world < 2:
            return
        began = time.monotonic()
        if not self._join():
            return
        filling = time.monotonic()
        header, tensors = capture()
        size = sum(t.numel() * t.element_size() for t in tensors)
        if 4 * size > self.budget_bytes:
            self.off_reason = (f"4 copies of this rank's {size}-byte shard exceed the peer copy's "
                               f"budget of {self.budget_bytes} bytes")
            log(f"event=peer_copy_off rank={self._rank} reason=\"{self.off_reason}\"")
            return
        acked, spare = self._own[1], self._own[0]  # the one sent last is acked now
        spare.ensure(Layout([t.numel() * t.element_size() for t in tensors]).total)
        fill_flat(tensors, spare.flat)
        spare.header, spare.step, spare.shard = header, step, shard
        self._own = [acked, spare]
        now = time.monotonic()
        self.copy_seconds += now - began
        self.fill_seconds += now - filling
        self.copy_bytes = size
        self.copies += 1
        incoming = self._held[1]
        self._result = None
        self._thread = threading.Thread(target=self._exchange, args=(spare, incoming),
                                        name="muster-peer-copy", daemon=True)
        self._thread.start()

    def _join(self):
        """Ends the exchange in flight: commits what came in whole. False
        when it failed (the group is broken until the next generation)."""
        if self._thread is None:
            return True
        self._thread.join()
        self._thread = None
        if self._result is not None:
            log(f"rank {self._rank}: peer copy stopped ({self._result}); it starts again with "
                f"the next generation")
            self._group = None
            return False
        self._held.reverse()  # incoming -> committed
        return True

    def _exchange(self, outgoing, incoming):
        try:
            right, left = (self._rank + 1) % self._world, (self._rank - 1) % self._world
            sizes = torch.tensor([outgoing.step, outgoing.shard, len(outgoing.header),
                                  outgoing.flat.numel()], dtype=torch.int64)
            theirs = torch.zeros(4, dtype=torch.int64)
            works = [dist.isend(sizes, right, group=self._group),
                     dist.irecv(theirs, left, group=self._group)]
            for work in works:
                work.wait()
            step, shard, header_len, flat_len = (int(v) for v in theirs)
            header = torch.empty(header_len, dtype=torch.uint8)
            incoming.ensure(flat_len)
            works = [dist.isend(torch.frombuffer(bytearray(outgoing.header), dtype=torch.uint8),
                                right,
                                group=self._group),
                     dist.irecv(header, left, group=self._group),
                     dist.isend(outgoing.flat, right, group=self._group),
                     dist.irecv(incoming.flat[:flat_len], left, group=self._group)]
            incoming.step = -1  # not whole until every byte came
            for work in works:
                work.wait()
            incoming.header, incoming.step, incoming.shard = header.numpy().tobytes(), step, shard
        except Exception as error:  # the group was interrupted: a peer is gone
            self._result = f"{type(error).__name__}: {str(error)[:200]}"

    def settle(self):
        """After an interrupt: the exchange in flight ends one way or the other."""
        if self._thread is not None:
            self._join()

    # --- what recovery can use ------------------------------------------------
    def offer_parts(self, shard):
        """(steps of this rank's own snapshots of `shard`, (shard, step) of the copy it holds)."""
        steps = tuple(b.step for b in self._own if b.step >= 0 and b.shard == shard)
        held = self._held[0]
        return steps, ((held.shard, held.step) if held.step >= 0 else None)

    def _own_at(self, step):
        return next(b for b in self._own if b.step == step)

    def snapshot_image(self, step):
        buffer = self._own_at(step)
        return decode_flat(buffer.header, buffer.flat)

    def held_image(self):
        held = self._held[0]
        return decode_flat(held.header, held.flat)

    def snapshot_outgoing(self, step):
        buffer = self._own_at(step)
        return Outgoing.of_snapshot(buffer.header, buffer.flat)

    def held_outgoing(self):
        return Outgoing.of_snapshot(self._held[0].header, self._held[0].flat)


"""Which step a sharded job resumes at after a fault, and where each rank's
shard comes from: a pure decision over what every rank reports (no torch,
no I/O; sharded.py carries it out).

A shard is named by its index along the mesh's shard dimension: with a
(replicate R, shard S) mesh, rank r holds shard r % S, and every replica
group holds the same S shards. Content is (shard, step): the shard's
parameters and optimizer state after `step` steps.

Each rank reports an Offer:
- `live`: the step of the state in its model (-1: none, a process started
  into this generation or one whose state is not trusted);
- `snapshots`: the steps of its own host copies of its shard (peer_copy.py);
- `held`: (shard, step) of a peer's shard copy it holds, or None;
- `shard`: the shard its live state and snapshots are of (-1: none), under
  `shards` shards in the last generation.

`plan(offers, shards)` picks the largest step T at which every shard of the
new layout is available somewhere, and for every rank where its shard at T
comes from: its own live state, its own snapshot, or a transfer from a
sender (live state preferred to a snapshot, a snapshot to a held copy, the
least loaded sender first, then the lowest rank). It returns None, with
the reason, when no step is complete: the job cannot recover in place.

When no rank has any state (the job's first generation) every rank keeps
what it built: T is the largest `start` reported (a resumed checkpoint's
step, the same on every rank).
"""
from typing import List, NamedTuple, Optional, Tuple

LIVE, SNAPSHOT, HELD = "live", "snapshot", "held"
_PREFERENCE = {LIVE: 0, SNAPSHOT: 1, HELD: 2}


class Offer(NamedTuple):
    shard: int                       # the shard it holds (-1: none)
    shards: int                      # the shard count of that layout (-1: none)
    live: int                        # step of its live state (-1: none)
    snapshots: Tuple[int, ...]       # steps of its own snapshots of `shard`
    held: Optional[Tuple[int, int]]  # (shard, step) of a peer's copy it holds
    start: int = 0                   # the step it was constructed with


class Source(NamedTuple):
    kind: str    # LIVE, SNAPSHOT or HELD
    rank: int    # the rank that has it (this rank when it keeps its own)


class Plan(NamedTuple):
    step: int                                  # T: the step every rank resumes at
    sources: List[Source]                      # per rank: where its shard at T is
    sends: List[List[Tuple[int, str]]]         # per rank: (receiver, kind) it sends, in order


class NoPlan(NamedTuple):
    reason: str


def _having(offers, shards):
    """{(shard, step): [(kind, rank), ...]} of what can serve the new layout."""
    found = {}
    for rank, offer in enumerate(offers):
        if offer.shard >= 0 and offer.shards == shards:
            if offer.live >= 0:
                found.setdefault((offer.shard, offer.live), []).append((LIVE, rank))
            for step in offer.snapshots:
                if step >= 0 and step != offer.live:
                    found.setdefault((offer.shard, step), []).append((SNAPSHOT, rank))
        if offer.held is not None and offer.shards == shards:
            shard, step = offer.held
            if shard >= 0 and step >= 0:
                found.setdefault((shard, step), []).append((HELD, rank))
    return found


def plan(offers: List[Offer], shards: int):
    """The Plan for `offers` (one per rank of the new generation, in rank
    order) under `shards` shards, or NoPlan(reason)."""
    world = len(offers)
    if shards <= 0 or world % shards:
        return NoPlan(f"{world} ranks do not split into shards of {shards}")
    if all(o.shard < 0 for o in offers):  # the first generation: every rank built the same
        step = max(o.start for o in offers)
        return Plan(step, [Source(LIVE, r) for r in range(world)], [[] for _ in range(world)])
    layouts = {o.shards for o in offers if o.shard >= 0}
    if layouts != {shards}:
        return NoPlan(f"the state is sharded {sorted(layouts)} ways and the new mesh has "
                      f"{shards} shards: re-sharding in place needs the same shard count")
    having = _having(offers, shards)
    steps = sorted({step for _, step in having}, reverse=True)
    step = next((t for t in steps if all((s, t) in having for s in range(shards))), None)
    if step is None:
        missing = sorted(s for s in range(shards)
                         if not any(key[0] == s for key in having))
        what = (f"no rank holds shard(s) {missing}" if missing else
                f"no step at which every shard is held (held: {sorted(having)})")
        return NoPlan(f"{what}: no live copy of the lost state")
    sources, sends, load = [], [[] for _ in range(world)], [0] * world
    for rank, offer in enumerate(offers):
        want = rank % shards
        mine = [(kind, r) for kind, r in having[(want, step)] if r == rank]
        if mine:
            kind = min(mine, key=lambda kr: _PREFERENCE[kr[0]])[0]
            sources.append(Source(kind, rank))
            continue
        kind, sender = min(having[(want, step)],
                           key=lambda kr: (_PREFERENCE[kr[0]], load[kr[1]], kr[1]))
        load[sender] += 1
        sources.append(Source(kind, sender))
        sends[sender].append((rank, kind))
    return Plan(step, sources, sends)


# --- the offers' wire form: a fixed-length row of int64 per rank -------------
ROW = 9


def to_row(offer: Offer) -> List[int]:
    snaps = list(offer.snapshots[:2]) + [-1] * (2 - len(offer.snapshots[:2]))
    held = offer.held if offer.held is not None else (-1, -1)
    return [offer.shard, offer.shards, offer.live, snaps[0], snaps[1], held[0], held[1],
            offer.start, 1]


def from_row(row) -> Offer:
    values = [int(v) for v in row]
    if len(values) != ROW or values[8] != 1:
        raise ValueError(f"an offer row {values[:ROW]} is not of this version")
    held = None if values[5] < 0 else (values[5], values[6])
    return Offer(values[0], values[1], values[2], tuple(s for s in values[3:5] if s >= 0), held,
                 values[7])

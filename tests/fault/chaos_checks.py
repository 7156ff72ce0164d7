"""The invariants of the chaos suite, as pure functions over what the job left behind.

- generations(): the worker records chaos_worker.py wrote, {gen: {rank: record}};
- check_generations(): in every generation ranks are contiguous 0..W-1, every
  worker agrees on the world size, group ranks are 0..G-1 with one agent each
  and exactly one master (group rank 0), the world size is within
  [MIN, MAX] x nproc, and no worker started while a worker of an earlier
  generation was still alive (the record's "overlap");
- check_checkpoints(): every final-named checkpoint in the directory is whole
  (magic, version, length field = file size, CRC-32C, lengths inside the file,
  the step in the file = the step in its name) and the newest is not older than
  the furthest step the job reached minus one checkpoint interval;
- check_workers_kept(): after a fault that changed no membership (the
  rendezvous moved to another replica), no newer generation and every worker
  of the generation before still the same process;
- read_floats()/max_relative_difference(): muster-train's --out weights.

The checkpoint format is worker_runtime/checkpoint/checkpoint.h's (version 1).
Every failure is raised as InvariantError naming the invariant and the evidence.
"""
import os
import re
import struct
import sys

# The integration tests' readers of worker records and trained weights.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import elastic_harness  # noqa: E402
import train_harness  # noqa: E402


class InvariantError(AssertionError):
    """An invariant did not hold: .invariant names it, the message gives the evidence."""

    def __init__(self, invariant, evidence):
        super().__init__(f"invariant '{invariant}' violated: {evidence}")
        self.invariant = invariant
        self.evidence = evidence


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), as worker_runtime/checkpoint/crc32c.h computes it."""
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


CKPT_NAME = re.compile(r"ckpt-(\d{12})\.mck")
CKPT_TEMP = re.compile(r"\.ckpt-\d+\.mck\.tmp-")


def validate_checkpoint(data, name_step):
    """None when `data` is a whole version-1 checkpoint of step name_step, else why not."""
    if len(data) < 56:
        return f"only {len(data)} bytes"
    if data[:8] != b"MSTRCKPT":
        return f"magic {data[:8]!r}"
    version, total, step = struct.unpack_from("<IQQ", data, 8)
    if version != 1:
        return f"format version {version}"
    if total != len(data):
        return f"length field {total} but {len(data)} bytes on disk (torn)"
    stored = struct.unpack_from("<I", data, len(data) - 4)[0]
    computed = crc32c(memoryview(data)[:-4])
    if stored != computed:
        return f"CRC-32C {stored:#010x} stored, {computed:#010x} computed"
    if step != name_step:
        return f"holds step {step}, named for step {name_step}"
    pos = 44
    end = len(data) - 4
    (meta_len,) = struct.unpack_from("<Q", data, pos)
    pos += 8 + meta_len
    if pos + 8 > end:
        return f"metadata length {meta_len} points past the end"
    (count,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    for i in range(count):
        if pos + 8 > end:
            return f"tensor {i} of {count} starts past the end"
        (name_len,) = struct.unpack_from("<Q", data, pos)
        pos += 8 + name_len
        if pos + 8 > end:
            return f"tensor {i} name length {name_len} points past the end"
        (elements,) = struct.unpack_from("<Q", data, pos)
        pos += 8 + 4 * elements
        if pos > end:
            return f"tensor {i} element count {elements} points past the end"
    if pos != end:
        return f"{end - pos} stray bytes before the checksum"
    return None


def scan_checkpoints(ckpt_dir):
    """({step: None or why it is invalid}, [temp file names]) of the directory now."""
    steps, temps = {}, []
    try:
        names = os.listdir(ckpt_dir)
    except FileNotFoundError:
        return steps, temps
    for name in names:
        m = CKPT_NAME.fullmatch(name)
        if m:
            try:
                with open(os.path.join(ckpt_dir, name), "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue  # rotated away (keep_last) while we listed: not a loss
            steps[int(m.group(1))] = validate_checkpoint(data, int(m.group(1)))
        elif CKPT_TEMP.match(name):
            temps.append(name)
    return steps, temps


def check_checkpoints(ckpt_dir, furthest_step, interval):
    """Every final checkpoint whole; the newest at least furthest_step - interval.

    furthest_step is the highest step rank 0 reported so far (read before the
    directory is listed). A step's progress line comes before its save, so a
    save under way (or killed) leaves the newest one interval behind, never more.
    Returns (newest step or None, temp file names).
    """
    steps, temps = scan_checkpoints(ckpt_dir)
    bad = {s: why for s, why in steps.items() if why}
    if bad:
        raise InvariantError("no corrupt checkpoint",
                             "; ".join(f"{ckpt_dir}/ckpt-{s:012d}.mck: {why}"
                                       for s, why in sorted(bad.items())))
    newest = max(steps) if steps else None
    if (newest or 0) < furthest_step - interval:  # no checkpoint yet counts as step 0
        raise InvariantError("no checkpoint lost beyond the last interval",
                             f"the job reached step {furthest_step}, checkpoints every "
                             f"{interval} steps, but the newest valid checkpoint in {ckpt_dir} "
                             f"is {newest} (files: {sorted(steps)})")
    return newest, temps


def generations(record_dir):
    """{gen: {rank: record}} of every worker start chaos_worker.py recorded (the
    g<gen>_r<rank>.json files of the elastic tests' gen_dump.py)."""
    return elastic_harness.dumps(record_dir)


def complete(ranks):
    """True when every rank of the generation's world started."""
    return bool(ranks) and len(ranks) == next(iter(ranks.values()))["world_size"]


def check_generations(gens, min_nodes, max_nodes, nproc):
    """Raises the first violation generation_violations() finds."""
    for error in generation_violations(gens, min_nodes, max_nodes, nproc):
        raise error


def generation_violations(gens, min_nodes, max_nodes, nproc):
    """Every violation of the per-generation invariants over {gen: {rank: record}}.

    An incomplete generation (some ranks never started: it was stopped while
    starting) is checked for overlap and its world size only.
    """
    # In place, a worker of an earlier generation that joined this one is
    # alive by design (it paused before the generation formed): not an overlap.
    joined = {(rec["pid"], gen) for gen, ranks in gens.items() for rec in ranks.values()}
    for gen, ranks in sorted(gens.items()):
        try:
            _check_generation(gen, ranks, min_nodes, max_nodes, nproc)
        except InvariantError as e:
            yield e
        for rec in ranks.values():
            rec["overlap"] = [o for o in rec["overlap"] if (o["pid"], gen) not in joined]
        # One violation per generation: every new worker that met an old one alive.
        met = [ranks[r] for r in sorted(ranks) if ranks[r]["overlap"]]
        if met:
            old = {(o["gen"], o["rank"], o["pid"], o["host"]) for rec in met
                   for o in rec["overlap"]}
            first = min(met, key=lambda rec: rec["start"])
            yield InvariantError(
                "never two generations' workers alive at once",
                f"gen {gen} rank(s) {', '.join(str(rec['rank']) for rec in met)} (hosts "
                f"{sorted({rec['host'] for rec in met})}; the first, rank {first['rank']} pid "
                f"{first['pid']}, started at {first['start']:.3f}) started while these were "
                f"still alive: " + ", ".join(f"gen {g} rank {r} pid {p} on host {h}"
                                             for g, r, p, h in sorted(old)))


def _check_generation(gen, ranks, min_nodes, max_nodes, nproc):
    """One generation's invariants; raises the first violation."""
    worlds = {rec["world_size"] for rec in ranks.values()}
    if len(worlds) != 1:
        raise InvariantError("one world size per generation", f"gen {gen}: {sorted(worlds)}")
    world = worlds.pop()
    if not (min_nodes * nproc <= world <= max_nodes * nproc):
        raise InvariantError("world size within [MIN, MAX] x nproc",
                             f"gen {gen}: world size {world}, allowed "
                             f"{min_nodes * nproc}..{max_nodes * nproc}")
    if not complete(ranks):
        if any(r >= world for r in ranks):
            raise InvariantError("ranks contiguous 0..W-1",
                                 f"gen {gen}: ranks {sorted(ranks)} with world size {world}")
        return
    if sorted(ranks) != list(range(world)):
        raise InvariantError("ranks contiguous 0..W-1",
                             f"gen {gen}: ranks {sorted(ranks)}, world size {world}")
    masters = {rec["master"] for rec in ranks.values()}
    if len(masters) != 1:
        raise InvariantError("one master address per generation", f"gen {gen}: {masters}")
    agents_of_group = {}
    for rec in ranks.values():
        agents_of_group.setdefault(rec["group_rank"], set()).add((rec["host"], rec["ppid"]))
    if any(len(a) != 1 for a in agents_of_group.values()):
        raise InvariantError("each group rank is one agent",
                             f"gen {gen}: {agents_of_group}")
    agents = [next(iter(a)) for a in agents_of_group.values()]
    if len(set(agents)) != len(agents):
        raise InvariantError("each agent holds one group rank", f"gen {gen}: {agents_of_group}")
    group_world = {rec["group_world_size"] for rec in ranks.values()}
    if sorted(agents_of_group) != list(range(group_world.pop())) or group_world:
        raise InvariantError("group ranks contiguous 0..G-1",
                             f"gen {gen}: group ranks {sorted(agents_of_group)}")
    if len(agents_of_group.get(0, ())) != 1:
        raise InvariantError("exactly one master (group rank 0) per generation",
                             f"gen {gen}: group rank 0 held by {agents_of_group.get(0)}")
    if not (min_nodes <= len(agents) <= max_nodes):
        raise InvariantError("node count within [MIN, MAX]",
                             f"gen {gen}: {len(agents)} agents, allowed {min_nodes}..{max_nodes}")


def check_workers_kept(gen, ranks, gens_now, alive):
    """Raises unless generation `gen` ({rank: record}) is still the newest in gens_now
    and every one of its workers still runs; alive(pid, ticks) says whether one does."""
    newer = sorted(g for g in gens_now if g > gen)
    gone = [rec for _, rec in sorted(ranks.items()) if not alive(rec["pid"], rec["ticks"])]
    if not newer and not gone:
        return
    evidence = []
    if newer:
        evidence.append("generation(s) " + ", ".join(
            f"{g} ({len(gens_now[g])} of {next(iter(gens_now[g].values()))['world_size']} "
            f"workers started, the first at {min(r['start'] for r in gens_now[g].values()):.3f})"
            for g in newer) + f" started after generation {gen}")
    if gone:
        evidence.append(f"workers of generation {gen} gone: " + ", ".join(
            f"rank {rec['rank']} pid {rec['pid']} host {rec['host']}" for rec in gone))
    raise InvariantError("no worker restarted when membership did not change",
                         "; ".join(evidence))


read_floats = train_harness.read_floats


def max_relative_difference(a, b):
    """train_harness's measure; infinite for weight lists of different lengths."""
    if len(a) != len(b):
        return float("inf")
    return train_harness.max_relative_difference(a, b)

"""What an in-place recovery leaves to read, for the benchmarks (torch_in_place.py):
the STEP log of examples/torch/ddp_in_place.py (and of scripts/bench/ddp_plain.py),
and the lines the muster package and muster log about a recovery.

    log = StepLog(path)
    log.poll()                                   # reads the lines completed since the last poll
    log.all_at(world, step)                      # every rank 0..world-1 logged step >= `step`
    log.new_generation(t0, world, agreed)        # {rank: its first Step of the new generation}
    RecoveryLog().poll(paths)                    # the RecoveryLines of launchers' stderr

A STEP line is `STEP <rank> <step> <pid> <unix time>`, appended by each rank after every
optimizer step; `step` counts the steps done (1 for the first). Its time is the
worker's time.time(): the benchmark uses the same clock (a chroot's included).
"""
import re
import statistics

from torch_recovery_runs import Worker


class Step:
    __slots__ = ("rank", "step", "pid", "t")

    def __init__(self, rank, step, pid, t):
        self.rank, self.step, self.pid, self.t = rank, step, pid, t


class StepLog:
    """The lines of one STEP log, read incrementally. `workers` ({pid: torch_recovery_runs.Worker},
    its starttime read when first seen) lets torch_recovery_runs.Run.kill_all kill the workers a
    killed launcher left behind."""

    LINE = re.compile(r"STEP (\d+) (\d+) (\d+) ([\d.]+)$")

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.lines = []        # Step, in file order
        self.first_seen = {}   # pid -> t of its first line
        self.workers = {}

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1  # complete lines only
        self.offset += end
        for text in data[:end].decode(errors="replace").splitlines():
            m = self.LINE.match(text.strip())
            if not m:
                continue
            line = Step(int(m.group(1)), int(m.group(2)), int(m.group(3)), float(m.group(4)))
            self.lines.append(line)
            if line.pid not in self.first_seen:
                self.first_seen[line.pid] = line.t
                self.workers[line.pid] = Worker(line.pid, line.rank)

    def latest(self, before=None):
        """{rank: its last Step} (of the lines logged at or before `before`, when given)."""
        last = {}
        for line in self.lines:
            if before is None or line.t <= before:
                last[line.rank] = line
        return last

    def all_at(self, world, step):
        last = self.latest()
        return sorted(last) == list(range(world)) and all(s.step >= step for s in last.values())

    def is_new(self, line, t0, agreed=None):
        """Whether `line` belongs to the generation begun after `t0`: logged after it by a
        process first seen after it (a restarted or added one), or by any process past
        `agreed`, the step an in-place recovery agreed on (a survivor's; None: no such
        recovery). A survivor cannot have logged a step past `agreed` in the old
        generation: had any survivor completed it, the agreement would have been on it."""
        return line.t > t0 and (self.first_seen[line.pid] > t0
                                or (agreed is not None and line.step > agreed))

    def new_generation(self, t0, world, agreed=None):
        """{rank: the first Step of that rank in the new generation} once every rank
        0..world-1 logged one there; None before."""
        first = {}
        for line in self.lines:
            if line.rank not in first and self.is_new(line, t0, agreed):
                first[line.rank] = line
        return first if sorted(first) == list(range(world)) else None

    def redone(self, group, t0, agreed=None):
        """Steps redone after the fault: the furthest step any process of the old generation
        completed (before or after t0), minus the first step the new generation logged,
        plus one; 0 when the new generation went on from where the old one got to."""
        done = max((s.step for s in self.lines if not self.is_new(s, t0, agreed)), default=0)
        resumed = min(s.step for s in group.values())
        return max(0, done - resumed + 1), resumed

    def intervals(self, skip):
        """Per-step intervals (s) of every rank after its step `skip`, pooled, and each
        rank's mean step time over the same steps: (intervals, [mean per rank])."""
        by_rank = {}
        for line in self.lines:
            by_rank.setdefault(line.rank, []).append(line)
        pooled, means = [], []
        for lines in by_rank.values():
            lines = [s for s in sorted(lines, key=lambda s: s.step) if s.step >= skip]
            gaps = [b.t - a.t for a, b in zip(lines, lines[1:])]
            pooled += gaps
            if gaps:
                means.append(statistics.fmean(gaps))
        return pooled, means


# ---------------------------------------------------------------------------
# The lines of one recovery, from a launcher's stderr (workers' lines included)

RECOVERED = re.compile(r"muster: rank (\d+): recovered in place at step (\d+) \(failed at (\d+); "
                       r"state ([^;]+); world size (\d+)\) in ([\d.]+) s \[(.*)\]")
JOINED = re.compile(r"muster: rank (\d+): joined at step (\d+) with rank (\d+)'s state "
                    r"\(world size (\d+)\)(.*)")
PHASE = re.compile(r"(leave|wait|form|group|state|ddp) ([\d.]+) s")
RECOVERED_EVENT = re.compile(r"event=in_place_recovered attempt=\d+ paused_ms=([\d.]+) "
                             r"total_ms=([\d.]+)")
JOIN_EVENT = re.compile(r"event=in_place_join attempt=\d+ survivors=(\d+) restarted=(\d+)")
FALLBACK = re.compile(r"event=(in_place_fallback|restart_not_in_place|in_place_abandoned)"
                      r".*?(?:why|reason)=\"(.*?)\"")


class RecoveryLines:
    def __init__(self):
        self.recovered = []   # {"rank", "step", "failed_at", "state", "world", "total", phases...}
        self.joined = []      # {"rank", "step", "source", "world", "group", "state", "ddp"}
        self.events = []      # (paused_s, total_s) of each event=in_place_recovered
        self.joins = []       # (survivors, restarted) of each event=in_place_join
        self.fallbacks = []   # "event: why"

    def agreed(self):
        """The step the survivors recovered at (the largest, should they differ), or None."""
        return max((r["step"] for r in self.recovered), default=None)

    def add(self, text):
        for m in RECOVERED.finditer(text):
            r = {"rank": int(m.group(1)), "step": int(m.group(2)), "failed_at": int(m.group(3)),
                 "state": m.group(4), "world": int(m.group(5)), "total": float(m.group(6))}
            r.update((k, float(v)) for k, v in PHASE.findall(m.group(7)))
            self.recovered.append(r)
        for m in JOINED.finditer(text):
            j = {"rank": int(m.group(1)), "step": int(m.group(2)), "source": int(m.group(3)),
                 "world": int(m.group(4))}
            j.update((k, float(v)) for k, v in PHASE.findall(m.group(5)))
            self.joined.append(j)
        self.events += [(float(p) / 1000, float(t) / 1000) for p, t in RECOVERED_EVENT.findall(text)]
        self.joins += [(int(s), int(r)) for s, r in JOIN_EVENT.findall(text)]
        self.fallbacks += [f"{e}: {why}" for e, why in FALLBACK.findall(text)]


class RecoveryLog:
    """The RecoveryLines of launchers' stderr files, read as they grow: each
    poll parses only the complete lines a file gained since the last, so a
    poll during a timed recovery costs next to nothing."""

    def __init__(self):
        self.lines = RecoveryLines()
        self._consumed = {}  # path -> bytes parsed

    def poll(self, paths):
        for path in paths:
            done = self._consumed.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(done)
                    chunk = f.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n") + 1
            if end:
                self.lines.add(chunk[:end].decode(errors="replace"))
                self._consumed[path] = done + end
        return self.lines

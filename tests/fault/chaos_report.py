"""What a chaos run reports: the per-kind table, the kept-workers summary, the lines
log, the PNG timeline, the final PASS/FAIL; and the teardown that checks nothing is left."""
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_checks  # noqa: E402
import chaos_cluster as cluster  # noqa: E402
import chaos_png  # noqa: E402
from chaos_common import ALL_KINDS, percentile  # noqa: E402


class Report:
    """The run's tables and timeline. A part of chaos.Chaos: its methods read the run's state on self."""

    def steps_redone(self):
        """Progress lines for a step already reported before. Each is charged to the
        latest fault injected before the generation that printed it started (the
        generation running at the line's time); the wind-down's own are not counted."""
        seen = set()
        for fault in self.faults:
            fault.redone = 0
        faults = sorted((f for f in self.faults if f.t), key=lambda f: f.t)
        starts = sorted(min(r["start"] for r in ranks.values())
                        for ranks in self.gens().values() if chaos_checks.complete(ranks))
        wind_down = getattr(self, "wind_down_t", None)
        for t, step in sorted(self.steps):
            if step in seen:
                began = max((s for s in starts if s <= t), default=t)
                owner = None
                for f in faults:
                    if f.t <= began:
                        owner = f
                if owner and not (wind_down and began >= wind_down):
                    owner.redone += 1
            seen.add(step)

    def table(self):
        self.steps_redone()
        rows = [("fault", "count", "detect p50", "detect p99", "recover p50", "recover p99",
                 "steps redone")]
        by_kind = {}
        for f in self.faults:
            by_kind.setdefault(f.kind, []).append(f)

        def ms(values, q):
            return f"{percentile(values, q) * 1000:.0f} ms" if values else "-"
        for kind in ALL_KINDS:
            fs = by_kind.get(kind, [])
            if not fs:
                rows.append((kind, "0", "", "", "", "", self.skipped.get(kind, "not drawn")[:60]))
                continue
            det = [f.detected - f.t for f in fs if f.detected]
            rec = [f.recovered - f.t for f in fs if f.recovered]
            red = [f.redone for f in fs]
            rows.append((kind, str(len(fs)), ms(det, 50), ms(det, 99), ms(rec, 50), ms(rec, 99),
                         f"{sum(red)} (max {max(red)})"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = []
        for j, r in enumerate(rows):
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
            if j == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def kept_summary(self):
        """How many recoveries kept every surviving worker in its process (in place)."""
        whole = sum(1 for _, kept, survivors in self.kept if kept == survivors)
        kept = sum(k for _, k, _ in self.kept)
        survivors = sum(s for _, _, s in self.kept)
        return (f"workers kept in place: {whole} of {len(self.kept)} recoveries "
                f"({kept} of {survivors} surviving worker processes kept their pid)")

    def write_lines(self, path):
        """Every line of every process with the time it arrived (seconds since the start):
        the per-process files in logs/ have no time of their own for the agents' lines."""
        with open(path, "w") as f:
            for t, source, stream, text in self.log.since():
                f.write(f"{t - self.t0:9.3f} {source}.{stream}: {text}\n")

    def timeline(self, path):
        self.parse()
        t0 = self.t0
        t_end = (getattr(self, "t_end", None) or time.time()) - t0
        gens = self.gens()
        starts = sorted((min(r["start"] for r in ranks.values()) - t0, g,
                         next(iter(ranks.values()))["world_size"])
                        for g, ranks in gens.items() if chaos_checks.complete(ranks))
        bands = [(s, starts[i + 1][0] if i + 1 < len(starts) else t_end, g)
                 for i, (s, g, _) in enumerate(starts)]
        worlds = [(s, w) for s, _, w in starts]
        steps = [(t - t0, s) for t, s in self.steps]
        faults = [(f.t - t0, (f.restored - t0) if f.restored else None, f.kind)
                  for f in self.faults if f.t]
        top = max([s for _, s in steps] + [1])
        colours = chaos_png.draw_timeline(path, t_end, steps, worlds, bands, faults, top,
                                          self.full_world)
        return chaos_png.legend(colours, t_end, top, self.full_world)


def teardown(chaos):
    """Kills everything by PID/process group, removes namespaces and mounts; returns leftovers."""
    problems = cluster.cleanup(chaos.registry.path)
    try:
        chaos.reaper.stdin.close()
        chaos.reaper.wait(timeout=60)
    except Exception:  # noqa: BLE001
        pass
    left = list(problems)
    procs = chaos.daemons + chaos.all_agents
    if chaos.replicas:
        procs += chaos.replicas.all_procs()
    alive = [p.name for p in procs if p.ticks is not None and cluster.pid_alive(p.pid, p.ticks)]
    if alive:
        left.append(f"processes still alive: {alive}")
    try:
        workers = [(r["pid"], r["ticks"], g, rank) for g, ranks in chaos.gens().items()
                   for rank, r in ranks.items()]
    except OSError:
        workers = []
    alive_workers = [f"gen {g} rank {r} pid {p}" for p, t, g, r in workers
                     if cluster.pid_alive(p, t)]
    if alive_workers:
        left.append(f"workers still alive: {alive_workers}")
    if chaos.torch:
        # The agents' warm processes and their workers name the records directory.
        # They die with their agent (PR_SET_PDEATHSIG): give them a moment.
        deadline = time.monotonic() + 5
        while (strays := cluster.processes_naming(chaos.records)) and time.monotonic() < deadline:
            time.sleep(0.05)
        if strays:
            left.append(f"processes naming {chaos.records} still alive: {strays}")
    if getattr(chaos, "hosts", None) is not None and chaos.hosts.netns:
        rest = chaos.hosts.leftovers()
        if rest:
            left.append(f"namespaces/links left: {rest}")
    if chaos.ckpt_mount and os.path.ismount(chaos.ckpt_mount):
        left.append(f"still mounted: {chaos.ckpt_mount}")
    return left


def report(chaos):
    print("", flush=True)
    if chaos.faults:
        print(chaos.table(), flush=True)
        for f in chaos.faults:
            if f.t:
                print(f"  {f.t - chaos.t0:7.2f}s {f.kind:12s} {f.target}; detected "
                      f"{chaos.fmt(f.detected, f.t)} ({f.detect_line[:110]}); recovered "
                      f"{chaos.fmt(f.recovered, f.t)}; redone {f.redone}"
                      + "".join(f"; {n}" for n in f.notes), flush=True)
    if chaos.torch and chaos.faults:
        print(chaos.kept_summary(), flush=True)
    if chaos.t0:
        chaos.write_lines(os.path.join(chaos.out_dir, "lines.log"))
        png = chaos.args.png or os.path.join(chaos.out_dir, "timeline.png")
        try:
            legend = chaos.timeline(png)
            print(f"timeline: {png}\n{legend}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"timeline: not written: {e!r}", flush=True)
    if chaos.failures:
        print(f"\nFAIL: {len(chaos.failures)} invariant violation(s) (seed {chaos.args.seed}):",
              flush=True)
        for e in chaos.failures:
            print(f"- {e}", flush=True)
            if getattr(e, "context", ""):
                print(e.context, flush=True)
        print(f"artefacts (logs, worker records, checkpoints): {chaos.out_dir}", flush=True)
    else:
        for sub in ("records", "ckpt", "ref-ckpt", "ckptfs"):
            shutil.rmtree(os.path.join(chaos.out_dir, sub), ignore_errors=True)
        print(f"\nPASS: every invariant held over {len(chaos.faults)} faults "
              f"(seed {chaos.args.seed}); logs and timeline in {chaos.out_dir}", flush=True)

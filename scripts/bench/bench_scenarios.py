"""What the scenario benchmarks (torch_recovery.py, torch_in_place.py) share: a plan of
scenarios, each a few columns run --runs times alternated, and the report around each
script's own tables.

    parser = scenario_parser(__doc__, SCENARIOS)   # [NAME], --scenario NAME, --runs N
    add_wait_args(parser, "a run")                 # --timeout, --window; the script's other options
    add_keep_and_bin_dir_args(parser)              # --keep, --bin-dir DIR
    if not find_binaries(args, musterd): return 2  # sets args.muster, args.musterd_bin
    plan = [Scenario(key, title, columns, fn)]     # fn(args, column, run) -> a result dict
    kept, workroot = run_alternated(args, plan, Run, label, describe, "muster-...-")
    for sc in plan:
        print_header(sc, label, args.runs)         # then the script's tables
        problems += print_targets(sc, lines)       # lines from target_line()
    return finish(kept, workroot, problems)        # the exit status

A result dict: "total" (s) when the run got there, else "error" (the run raised RunError: a
failure) or "none" (a reference that did not recover: reported, not a failure of muster);
a "problem" in it keeps the run's logs as the others do.
"""
import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import log
from testlib.torch_refs import ROOT


class RunError(Exception):
    """One run of a column failed; the message says how (it goes into the report)."""


class Scenario:
    """One scenario of the plan: fn(args, column, run) runs one column once; the results of
    each column's runs (sc.results[column]) and its first run's command lines accumulate."""

    def __init__(self, key, title, columns, fn):
        self.key, self.title, self.columns, self.fn = key, title, columns, fn
        self.results = {c: [] for c in columns}
        self.commands = {}


# ---------------------------------------------------------------------------
# Options

def scenario_parser(doc, scenarios):
    """A parser whose description is the first paragraph of `doc` (the script's docstring) and
    whose epilog is the rest from its third paragraph on, with the scenario as a positional
    name or --scenario (args.scenario_opt) and --runs."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=doc.split("\n\n", 2)[2])
    parser.add_argument("scenario", nargs="?", choices=scenarios + ("all",), default=None)
    parser.add_argument("--scenario", dest="scenario_opt", choices=scenarios + ("all",),
                        help="same as the positional name")
    parser.add_argument("--runs", type=int, default=5, help="alternated runs per column (default 5)")
    return parser


def add_wait_args(parser, bounded):
    """--timeout: the bound on every wait of `bounded` ("a run"); --window: how long a torchrun
    is watched after a kill."""
    parser.add_argument("--timeout", type=float, default=180,
                        help=f"bound on every wait of {bounded} (default 180 s)")
    parser.add_argument("--window", type=float, default=60,
                        help="how long a torchrun is watched after a kill (default 60 s)")


def add_keep_and_bin_dir_args(parser):
    parser.add_argument("--keep", action="store_true", help="keep every run's temp dir")
    parser.add_argument("--bin-dir", default=os.environ.get("MUSTER_BIN_DIR",
                                                            os.path.join(ROOT, "build", "bin")))


def find_binaries(args, musterd):
    """Sets args.muster and args.musterd_bin (in --bin-dir). False, after saying why on stderr,
    when muster, or musterd where `musterd`, is not executable there."""
    args.muster = os.path.join(args.bin_dir, "muster")
    args.musterd_bin = os.path.join(args.bin_dir, "musterd")
    for path in [args.muster] + ([args.musterd_bin] if musterd else []):
        if not os.access(path, os.X_OK):
            print(f"error: {path} not found or not executable: build muster first "
                  f"(scripts/build.sh build), or point --bin-dir / MUSTER_BIN_DIR at the binaries",
                  file=sys.stderr)
            return False
    return True


# ---------------------------------------------------------------------------
# Runs

def run_alternated(args, plan, new_run, label, describe, prefix):
    """Runs each scenario's columns args.runs times, the order reversed every other run,
    args.settle s apart, each in new_run(workroot, name) (a temp dir under a workroot named
    `prefix`...). Appends each result to sc.results[column] and logs a line for it (the
    result's describe(sc, res) when it has a "total", else why not); a column's first run
    gives sc.commands[column] (run.shown_commands()).
    Every run's processes are killed after it (run.kill_all()), the current one's also when a
    signal interrupts (Interrupted passes through, after the cleanup). A run's temp dir is
    removed unless the run failed, has a "problem" or --keep.
    Returns (kept, workroot): whether any run's dir was kept, and where (removed when none)."""
    workroot = tempfile.mkdtemp(prefix=prefix)
    kept = False
    current = None
    began = time.monotonic()
    try:
        for sc in plan:
            for i in range(args.runs):
                for column in (sc.columns if i % 2 == 0 else list(reversed(sc.columns))):
                    current = new_run(workroot, f"{sc.key}-{column}-{i + 1}")
                    try:
                        res = sc.fn(args, column, current)
                    except RunError as exc:
                        res = {"error": str(exc)}
                    finally:
                        current.kill_all()
                    if column not in sc.commands:
                        sc.commands[column] = current.shown_commands()
                    sc.results[column].append(res)
                    desc = describe(sc, res) if "total" in res else (res.get("none") or res["error"])
                    log(f"[{time.monotonic() - began:6.0f} s] {sc.key} run {i + 1} {label[column]}: {desc}")
                    if "error" in res or "none" in res or res.get("problem") or args.keep:
                        log(f"  logs kept in {current.dir}")
                        kept = True
                    else:
                        shutil.rmtree(current.dir, ignore_errors=True)
                    current = None
                    time.sleep(args.settle)
    finally:
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # let the cleanup finish
        if current is not None:
            current.kill_all()
        if not kept:
            shutil.rmtree(workroot, ignore_errors=True)
    return kept, workroot


# ---------------------------------------------------------------------------
# Report

def med(values):
    return statistics.median(values) if values else None


def fmt(x, unit="s"):
    """Seconds as "0.123 s" ("12.3 s" from 10 s on), or as "123.000 ms" with unit "ms"; "—" for None."""
    if x is None:
        return "—"
    if unit == "ms":
        return f"{x * 1000:.3f} ms"
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def span(values, unit="s"):
    """"min–max unit" of `values`; "—" when there are none."""
    if not values:
        return "—"
    low = fmt(min(values), unit)
    return f"{low.rsplit(' ', 1)[0]}–{fmt(max(values), unit)}"


def print_header(sc, label, runs):
    """The scenario's title, its run count and each column's command lines (its first run)."""
    print(f"\n## {sc.title}\n")
    print(f"{runs} alternated runs per column (figures only from a quiet machine: check the load)\n")
    print("commands (first run):")
    for c in sc.columns:
        for line in sc.commands.get(c, []):
            print(f"  [{label[c]}] {line}")
    print()


def print_failures(sc, label, c, others, cells, fatal):
    """The table rows under column c's for its runs without a "total" (`others`), one per
    distinct reason (`cells`: the table's column count). Returns them as problems when `fatal`
    (a muster column), else []."""
    problems = []
    for what in dict.fromkeys(r.get("none") or r.get("error") for r in others):
        same = [r for r in others if (r.get("none") or r.get("error")) == what]
        print(f"|  ↳ {len(same)}x | {' '.join(what.split())[:400]} |" + " |" * (cells - 2))
        if fatal:
            problems.append(f"{sc.key}: {label[c]} failed {len(same)}x: {what[:200]}")
    return problems


def print_block(lines):
    """A blank line, then `lines`; nothing when there are none."""
    if lines:
        print()
        for line in lines:
            print(line)


def target_line(name, ok, text):
    return f"target {name}: {text}: {'met' if ok else 'MISSED'}"


def print_targets(sc, lines):
    """Prints the scenario's target lines (target_line's); returns the MISSED ones as problems."""
    print_block(lines)
    return [f"{sc.key}: {line}" for line in lines if "MISSED" in line]


def finish(kept, workroot, problems):
    """The report's end: where kept logs are, then the problems. Returns the exit status: 1
    when there is a problem, else 0."""
    if kept:
        print(f"\nlogs kept under {workroot}")
    if problems:
        print("\nproblems:\n" + "\n".join(f"- {p}" for p in problems))
    return 1 if problems else 0

"""Warm workers on an unmodified PyTorch DDP script: muster (warm and cold) vs torchrun 1.13 and 2.14.

usage: torch_recovery.py [worker-kill|agent-kill|first-step|all] [--runs N] [options]
       (--scenario NAME is the same as the positional name; default: all)

The workers run scripts/bench/torch_ddp_ckpt.py, an ordinary DDP script (gloo,
init_process_group from the environment, DistributedSampler, rank 0 saves a
checkpoint every 10 steps, every start resumes from it, --step-sleep per
step). It appends phase lines to a file per rank (--trace): t_first_line
(its first statement, before import torch), t_imported, t_pg (after
init_process_group) and t_step N, with its pid, TORCHELASTIC_RESTART_COUNT
and WORLD_SIZE. Every time below comes from those lines and this script's
time.time() at the kill or the launch (one clock, chroot included).

Columns: "muster warm" is muster with its default settings (warm workers on),
"muster cold" adds --no-warm-workers; muster's workers run /usr/bin/python3
(torch 1.13), MUSTER_LOG_LEVEL=info (its warm_ready / warm_fallback events
are read from its stderr). torchrun 1.13 is this host's Debian torchrun
through torchrun_compat.py; torchrun 2.14 is Debian sid's, through
tests/torch/chroot_python.sh in the chroot --torch-chroot (root only; else
skipped with the reason). Both torchruns get --monitor_interval 0.1. The
workers of torchrun 2.14 start through a small bench wrapper (written into the
run's temp dir) that makes TCPStore default to use_libuv=False when torch
imports it (Debian's torch is built without libuv; see tests/torch/no_libuv.py)
without importing anything itself, so t_first_line keeps its meaning. torchrun
2.14 also gets TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (unless
--torchrun-shared-store): by default its workers share the rendezvous's
TCPStore across restarts with no per-attempt prefix, and a restarted attempt
can then hang in init_process_group on the previous attempt's keys
(pytorch/pytorch#135712; seen here). A torchrun that does not restart or
re-form within --window s is reported as such, with where each rank got to.

Scenarios:
  worker-kill  --nproc (3) workers, one node, --standalone --max-restarts 3.
               Once every rank has logged step >= --kill-after-step (12; a
               checkpoint exists), rank 1's worker (its pid from its trace) is
               SIGKILLed. Measured: kill -> every rank logged a step of the new
               attempt. Columns: muster warm, muster cold, torchrun 1.13, 2.14.
               Targets: muster warm p50 <= 0.8 s and >= 5x faster than each
               torchrun.
  agent-kill   elastic: 3 agents x 2 workers on this machine (--nnodes 2:3
               --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:PORT --max-restarts 3
               --rdzv-conf last_call_timeout=1 for every launcher). Agent 0 is
               started first and serves the rendezvous (checked: it owns the
               listening socket); with --musterd a standalone musterd serves it.
               Once every rank steps, an agent that does not serve the
               rendezvous (preferably not the one holding rank 0 either) is
               SIGKILLed; with --kill node its workers are SIGKILLed with it (a
               lost node: torchrun's workers outlive a killed agent, muster's
               die with it). Measured: kill -> each of the 4 surviving ranks
               logged a step of the new generation (WORLD_SIZE 4). Columns:
               muster warm, muster cold, torchrun 2.14 (watched --window s; a
               torchrun that does not re-form is reported as such, with what
               it did instead). Target: muster warm p50 <= 1.2 s.
  first-step   launch -> every rank logged its first step, one node, --nprocs
               (4,8) workers, fresh checkpoint. Columns: muster warm, muster
               cold, torchrun 2.14, 1.13. Target: muster warm >= 2x faster than
               muster cold and than torchrun 2.14. Also: the warm process's RSS
               (muster's event=warm_ready rss_mib, plus its /proc Pss/Private),
               and the memory of the workers at step --rss-step (5): VmRSS from
               /proc/PID/status, Pss and Private_Clean+Private_Dirty from
               /proc/PID/smaps_rollup (medians over ranks and runs).

Phase breakdown (medians over runs): each phase ends when the LAST rank of
the new attempt reaches it, so the phases add up to the total:
  start   kill (launch) -> last t_first_line   detect + stop + start
  import  -> last t_imported                     interpreter + import torch
  pg      -> last t_pg                           init_process_group
  step    -> last first step                     DDP set-up, resume, one step
For muster columns the report also says how many workers were forked from
the warm process (no RANK in their /proc/PID/environ, the environment they
were exec'd with) and which warm_fallback events muster logged.

Runs alternate the columns, the order reversed every other run. Every process
is started in its own session; at the end of each run (and on SIGTERM/SIGINT/
SIGHUP) the launchers' process trees, every worker seen in a trace (pid and
start time checked) and the process groups are SIGKILLed; temp dirs are
removed unless a run failed (then kept and named) or --keep.

Exit status: 0; 1 when a muster run failed or a target was MISSED (torchrun's
results never fail the script); 2 on a usage error (missing binaries);
130 when interrupted.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import exit_with, interrupt_on_signals  # noqa: E402
from bench_scenarios import (Scenario, add_keep_and_bin_dir_args, add_wait_args, find_binaries,
                             finish, fmt, med, print_block, print_failures, print_header,
                             print_targets, run_alternated, scenario_parser, span, target_line)
from testlib.torch_refs import add_reference_args, chroot_unavailable_reason, selected_versions  # noqa: E402
from torch_recovery_runs import (MUSTER_COLUMNS, AGENTS, AGENT_NPROC, LABELS, PHASES, PYTHON, Run, SCENARIOS,
                                SURVIVORS)  # noqa: E402
from torch_recovery_agent_kill import agent_kill  # noqa: E402
from torch_recovery_first_step import first_step  # noqa: E402
from torch_recovery_worker_kill import worker_kill  # noqa: E402


# ---------------------------------------------------------------------------
# Report

def report(sc, skipped, runs):
    """Prints the tables of one scenario; returns the list of MISSED targets and failures."""
    problems = []
    print_header(sc, LABELS, runs)
    totals = {c: [r["total"] for r in sc.results[c] if "total" in r] for c in sc.columns}
    warm = med(totals.get("warm", []))
    print("| column | p50 (median) | min–max | runs ok | / muster warm (p50) |")
    print("|---|---|---|---|---|")
    for c in sc.columns:
        t = totals[c]
        others = [r for r in sc.results[c] if "total" not in r]
        ratio = f"{med(t) / warm:.1f}x" if (t and warm) else "—"
        print(f"| {LABELS[c]} | {fmt(med(t))} | {span(t)} | {len(t)}/{len(sc.results[c])} | {ratio} |")
        problems += print_failures(sc, LABELS, c, others, 5, fatal=c in MUSTER_COLUMNS)
    for v, reason in skipped.items():
        print(f"| {LABELS[v]} | not measured: {reason} | | | |")
    print("\nphase breakdown, medians (each phase ends when the last rank reaches it):\n")
    print("| column | " + " | ".join(label for _, label in PHASES) + " | total |")
    print("|---|" + "---|" * (len(PHASES) + 1))
    for c in sc.columns:
        ok = [r for r in sc.results[c] if "total" in r]
        if ok:
            print(f"| {LABELS[c]} | " + " | ".join(fmt(med([r[k] for r in ok])) for k, _ in PHASES)
                  + f" | {fmt(med([r['total'] for r in ok]))} |")
    extra = []
    for c in MUSTER_COLUMNS:
        ok = [r for r in sc.results.get(c, []) if "forked" in r]
        if ok:
            forked = sum(r["forked"][0] for r in ok)
            seen = sum(r["forked"][1] for r in ok)
            fallbacks = sorted({f for r in ok for f in r["fallbacks"]})
            ready = sum(1 for r in ok if r["ready"])
            extra.append(f"{LABELS[c]}: {forked}/{seen} workers forked from a warm process; "
                         f"warm_ready in {ready}/{len(ok)} runs; warm_fallback: "
                         + ("; ".join(f'"{f}"' for f in fallbacks) if fallbacks else "none"))
            if c == "warm" and (forked < seen or fallbacks):
                problems.append(f"{sc.key}: muster warm started {seen - forked} of {seen} workers "
                                f"cold" + (f" (fallback: {fallbacks[0]})" if fallbacks else ""))
    victims = sorted({r["victim"] for c in sc.columns for r in sc.results[c] if "victim" in r})
    if victims:
        extra.append("killed: " + "; ".join(victims))
    resumed = sorted({r["resumed_at"] for c in sc.columns for r in sc.results[c] if "resumed_at" in r})
    if resumed:
        extra.append(f"first step of the new attempt (resumed from the checkpoint): {resumed}")
    print_block(extra)
    return totals, problems


def print_memory(sc):
    print("\nmemory at step ~5, medians over runs (workers: median over ranks; MiB):\n")
    print("| column | worker VmRSS | worker Pss | worker Private | warm process rss_mib (log) | "
          "warm VmRSS | warm Pss | warm Private | warm import s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in sc.columns:
        ok = [r for r in sc.results[c] if "total" in r]
        if not ok:
            continue

        def m(key):
            values = [r[key] for r in ok if key in r]
            return f"{med(values):.0f}" if values else "—"

        imp = [r["warm_import_s"] for r in ok if "warm_import_s" in r]
        print(f"| {LABELS[c]} | {m('worker_rss')} | {m('worker_pss')} | {m('worker_private')} | "
              f"{m('warm_rss_log')} | {m('warm_rss')} | {m('warm_pss')} | {m('warm_private')} | "
              f"{(f'{med(imp):.2f}' if imp else '—')} |")


def describe(sc, res):
    """A run's progress line: its total and phases."""
    return f"{res['total']:.3f} s (" + ", ".join(f"{k} {res[k]:.3f}" for k, _ in PHASES) + ")"


# ---------------------------------------------------------------------------

def main():
    parser = scenario_parser(__doc__, SCENARIOS)
    parser.add_argument("--nproc", type=int, default=3, help="worker-kill: workers (default 3)")
    parser.add_argument("--nprocs", default="4,8", help="first-step: worker counts (default 4,8)")
    parser.add_argument("--step-sleep", type=float, default=0.05,
                        help="the script's sleep per step (default 0.05 s)")
    parser.add_argument("--kill-after-step", type=int, default=12,
                        help="kill once every rank logged this step (default 12)")
    parser.add_argument("--rss-step", type=int, default=5,
                        help="first-step: read worker memory at this step (default 5)")
    add_wait_args(parser, "a run")
    parser.add_argument("--last-call-timeout", type=int, default=1,
                        help="agent-kill: --rdzv-conf last_call_timeout for every launcher, whole "
                             "seconds as torchrun requires (default 1)")
    parser.add_argument("--kill", choices=("agent", "node"), default="agent",
                        help="agent-kill: SIGKILL the agent process only (default), or the agent and "
                             "its workers at once (a node lost)")
    parser.add_argument("--musterd", action="store_true",
                        help="agent-kill: muster's rendezvous in a standalone musterd, not agent 0")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="pause between runs, for the machine to quiet down (default 1 s)")
    parser.add_argument("--torchrun-shared-store", action="store_true",
                        help="torchrun 2.14 as it comes: workers share the rendezvous's TCPStore "
                             "across restarts (by default TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1, "
                             "without which its restarted workers can hang in init_process_group "
                             "on the previous attempt's keys: pytorch/pytorch#135712)")
    parser.add_argument("--columns", default="warm,cold,1.13,2.14",
                        help="columns to run, of warm, cold, warm-torch (the warm process imports "
                             "torch's modules only: MUSTER_WARM_IMPORT_SCAN=torch), 1.13, 2.14 "
                             "(default warm,cold,1.13,2.14; which torchruns a scenario compares "
                             "with by default is said above)")
    parser.add_argument("--script", choices=("ddp", "hf"), default="ddp",
                        help="the workers' script: torch_ddp_ckpt.py (default), or hf: "
                             "tests/torch/hf_trainer.py, a Hugging Face Trainer (transformers "
                             "and accelerate from the sid chroot; implies --muster-torch 2.14, "
                             "no checkpoint: a restart starts training over)")
    parser.add_argument("--muster-torch", choices=("1.13", "2.14"), default="1.13",
                        help="torch of muster's workers: this host's 1.13 (default) or the sid "
                             "chroot's 2.14 (tests/torch/chroot_python.sh)")
    add_keep_and_bin_dir_args(parser)
    add_reference_args(parser)
    args = parser.parse_args()
    if args.script == "hf":
        args.muster_torch = "2.14"
    scenario = args.scenario_opt or args.scenario or "all"
    if args.scenario_opt and args.scenario and args.scenario_opt != args.scenario:
        parser.error("the positional scenario and --scenario differ")
    scenarios = SCENARIOS if scenario == "all" else (scenario,)
    if not find_binaries(args, args.musterd and "agent-kill" in scenarios):
        return 2
    if not os.access(PYTHON, os.X_OK):
        print(f"error: {PYTHON} (Debian's python3 with torch) not found", file=sys.stderr)
        return 2
    try:
        nprocs = [int(x) for x in args.nprocs.split(",") if x.strip()]
    except ValueError:
        parser.error("--nprocs: comma-separated integers")
    if args.runs < 1 or args.nproc < 2 or any(n < 1 for n in nprocs):
        parser.error("--runs >= 1, --nproc >= 2 (rank 1 is killed), --nprocs >= 1")
    explicit = any(a == "--torchrun" or a.startswith("--torchrun=") for a in sys.argv[1:])
    versions = selected_versions(parser, args)
    skipped_all = {}
    if "2.14" in versions and (reason := chroot_unavailable_reason(args.torch_chroot)):
        skipped_all["2.14"] = reason

    def refs(defaults):
        chosen = [v for v in (versions if explicit else [v for v in defaults if v in versions])
                  if v in wanted]
        return ([v for v in chosen if v not in skipped_all],
                {v: skipped_all[v] for v in chosen if v in skipped_all})

    wanted = [c.strip() for c in args.columns.split(",") if c.strip()]
    for c in wanted:
        if c not in LABELS:
            parser.error(f"--columns: unknown column '{c}' (known: {', '.join(LABELS)})")
    if not args.torchrun_shared_store:
        LABELS["2.14"] = "torchrun 2.14 (chroot, unshared store)"

    def cols_of(refs_cols):
        return [c for c in list(MUSTER_COLUMNS) + refs_cols if c in wanted]

    plan = []  # (Scenario, skipped)
    if "worker-kill" in scenarios:
        cols, skipped = refs(["1.13", "2.14"])
        plan.append((Scenario("worker-kill",
                              f"worker-kill: {args.nproc} workers, one node; SIGKILL of rank 1 at step "
                              f">= {args.kill_after_step} -> every rank stepped in the new attempt",
                              cols_of(cols), worker_kill), skipped))
    if "agent-kill" in scenarios:
        cols, skipped = refs(["2.14"])
        plan.append((Scenario("agent-kill",
                              f"agent-kill: {AGENTS} agents x {AGENT_NPROC} workers (--nnodes 2:{AGENTS}, "
                              f"c10d, rendezvous served by {'musterd (muster) / agent0 (torchrun)' if args.musterd else 'agent0'}); "
                              f"SIGKILL of a non-serving agent{' and its workers' if args.kill == 'node' else ''} "
                              f"at step >= {args.kill_after_step} -> the "
                              f"{SURVIVORS} surviving ranks stepped in the new generation",
                              cols_of(cols), agent_kill), skipped))
    if "first-step" in scenarios:
        cols, skipped = refs(["2.14", "1.13"])
        for n in nprocs:
            plan.append((Scenario(f"first-step-{n}",
                                  f"first-step: {n} workers, one node; launch -> every rank's first step",
                                  cols_of(cols),
                                  lambda a, c, r, n=n: first_step(a, c, r, n)), skipped))

    interrupt_on_signals()
    kept, workroot = run_alternated(args, [sc for sc, _ in plan], Run, LABELS, describe,
                                    "muster-torch-recovery-")

    problems = []
    for sc, skipped in plan:
        totals, found = report(sc, skipped, args.runs)
        problems += found
        warm = med(totals.get("warm", []))
        lines = []
        if sc.key == "worker-kill" and warm is not None:
            lines.append(target_line("muster warm p50 <= 0.8 s", warm <= 0.8, fmt(warm)))
            for v in ("1.13", "2.14"):
                if totals.get(v):
                    r = med(totals[v]) / warm
                    lines.append(target_line(f"muster warm >= 5x faster than {LABELS[v]}", r >= 5, f"{r:.1f}x"))
        elif sc.key == "agent-kill" and warm is not None:
            lines.append(target_line("muster warm p50 <= 1.2 s", warm <= 1.2, fmt(warm)))
        elif sc.key.startswith("first-step") and warm is not None:
            for c in ("cold", "2.14"):
                if totals.get(c):
                    r = med(totals[c]) / warm
                    lines.append(target_line(f"muster warm >= 2x faster than {LABELS[c]}", r >= 2, f"{r:.1f}x"))
            print_memory(sc)
        problems += print_targets(sc, lines)
    return finish(kept, workroot, problems)


if __name__ == "__main__":
    exit_with(main)

"""recovery_inplace.py's elastic faults: the in-place and restart variants alternated
(in_place_elastic.elastic_run), one table, and the in-place targets' verdict."""
import statistics
import time

from bench_procs import Interrupted, log
from in_place_elastic import (ELASTIC_TARGET_MS, FAULT_SHORT, FAULT_TEXT, TORCHRUN_ELASTIC,
                              elastic_fault_free, elastic_run)
from in_place_runs import (LABELS, TARGET_REDONE, RunFailed, med_range, print_verdict,
                           run_alternated)


def elastic_main(args):
    """--fault agent-kill, agent-stop, node-join or link-down: in-place vs restart, alternated."""
    fault = args.fault
    variants = ["in-place", "restart"]
    t0 = time.monotonic()
    try:
        try:
            ref = elastic_fault_free(args)
        except RunFailed as e:
            log(f"fault-free run failed: {e}")
            return 1
        step = "-" if ref["step_ms"] is None else f"{ref['step_ms']:.1f} ms"
        log(f"fault-free run (one agent, {args.nproc} workers): {args.steps} steps, step time median "
            f"{step}, {len(ref['weights'])} bytes of weights")
        def describe(r):
            extra = ""
            if r["agent_total_ms"] is not None:
                extra += f", muster total_ms={r['agent_total_ms']:.0f}"
            if r["agent_restarted"] is not None:
                extra += f", in_place_join restarted={r['agent_restarted']}"
            src = "" if r["live_source"] is None else f" (state from rank {r['live_source']})"
            if fault == "node-join":
                return (f"joiner started -> admitted {r['admitted_after_ms']:.0f} ms; "
                    f"world size {2 * args.nproc} stepping {r['ms']:.0f} ms after the admission "
                    f"({r['from_drain_ms']:.0f} ms after the drain began); last step before "
                    f"{r['last_before_recovery']}, went on from {r['went_on_from']}{src} "
                    f"(redone {r['redone']}), first step after {r['first_step_after']}; first "
                    f"node's processes restarted {r['restarted']}, kept pids {r['survivors_kept']}; "
                    f"generations after the join {r['generations_after']}; second agent exit "
                    f"{r['second_rc']}{extra}; weights equal {r['weights_equal']}")
            else:
                det = "-" if r["detected_ms"] is None else f"{r['detected_ms']:.0f}"
                gen = "-" if r["generation_ms"] is None else f"{r['generation_ms']:.0f}"
                gone = ("" if r["second_workers_gone"] is None
                        else f", its workers gone {r['second_workers_gone']}")
                cont = ("" if r["cont_after_ms"] is None
                        else f", SIGCONT at {r['cont_after_ms']:.0f} ms")
                return (f"node_dead after {det} ms, new generation after "
                    f"{gen} ms, stepping again after {r['ms']:.0f} ms; last step before the "
                    f"fault {r['last_before_fault']}, before the recovery "
                    f"{r['last_before_recovery']}, went on from {r['went_on_from']}{src} "
                    f"(redone {r['redone']}), first step after {r['first_step_after']}; "
                    f"survivors' processes restarted {r['restarted']}, kept pids "
                    f"{r['survivors_kept']}; generations after the fault "
                    f"{r['generations_after']}; second agent exit {r['second_rc']}{gone}{cont}"
                    f"{extra}; weights equal {r['weights_equal']}")

        results, failures = run_alternated(
            args, variants, lambda v, tag: elastic_run(v, args, ref["weights"], tag=tag), describe)
    except Interrupted as e:
        log(f"interrupted ({e})")
        return 130

    world = 2 * args.nproc
    step = "-" if ref["step_ms"] is None else f"{ref['step_ms']:.1f} ms"
    if fault == "node-join":
        what = (f"a second agent joining (started once rank 0 printed step {args.kill_step}; the "
                f"daemon admits it after its last call)")
    else:
        what = (f"{FAULT_TEXT[fault]} once rank 0 printed step {args.kill_step} or later at world "
                f"size {world}")
    where = ("two agents, the second in its own network namespace behind a veth pair"
             if fault == "link-down" else "two agents on loopback")
    print(f"{what}, {args.steps} steps; {where}, one job (--nnodes 1:2, {args.nproc} "
          f"workers each, c10d rendezvous served by the first agent, --max-restarts 3), CPU/Gloo, step "
          f"sleep {args.step_sleep_ms} ms (fault-free step time, one agent: {step}), checkpoint every "
          f"{args.checkpoint_every} steps (restart variant), {args.runs} alternated runs, "
          f"{time.monotonic() - t0:.0f} s")
    if fault == "node-join":
        print(f"| variant | joiner stepping (admission -> rank 0's first step at world size {world}): "
              f"median | min-max | vs in-place | from the drain's start: median (min-max) | joiner "
              f"started -> admitted: median (min-max) | steps redone: median (min-max) | first node's "
              f"processes restarted: median (min-max) | first node kept pids | final weights == "
              f"fault-free |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    else:
        print(f"| variant | every rank stepping again ({FAULT_SHORT[fault]} "
              f"-> rank 0's first step after the recovery): median | min-max | vs in-place | node "
              f"declared dead (daemon's node_dead line): median (min-max) | steps redone: median "
              f"(min-max) | surviving node's processes restarted: median (min-max) | survivors kept "
              f"pids | final weights == fault-free |")
        print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    base = statistics.median([r["ms"] for r in results["in-place"]]) if results["in-place"] else None
    for v in variants:
        rs = results[v]
        n_failed = args.runs - len(rs)
        if not rs:
            print(f"| {LABELS[v]} | all {args.runs} runs failed |" + " |" * (8 if fault == "node-join" else 7))
            continue
        ms = [r["ms"] for r in rs]
        med, rng = med_range(ms, unit=" ms")
        ratio = f"{statistics.median(ms) / base:.1f}x" if base else "-"
        rd_med, rd_rng = med_range([r["redone"] for r in rs])
        rs_med, rs_rng = med_range([r["restarted"] for r in rs])
        kept = (f"{sum(r['survivors_kept'] for r in rs)}/{len(rs)}" if v == "in-place"
                else f"{sum(r['survivors_kept'] for r in rs)}/{len(rs)} (not expected)")
        weights = f"{sum(bool(r['weights_equal']) for r in rs)}/{len(rs)}"
        failed = f" ({n_failed} failed)" if n_failed else ""
        if fault == "node-join":
            dr_med, dr_rng = med_range([r["from_drain_ms"] for r in rs], unit=" ms")
            ad_med, ad_rng = med_range([r["admitted_after_ms"] for r in rs], unit=" ms")
            print(f"| {LABELS[v]}{failed} | {med} | {rng} | {ratio} | {dr_med} ({dr_rng}) | "
                  f"{ad_med} ({ad_rng}) | {rd_med} ({rd_rng}) | {rs_med} ({rs_rng}) | {kept} | {weights} |")
        else:
            dt_med, dt_rng = med_range([r["detected_ms"] for r in rs if r["detected_ms"] is not None],
                                       unit=" ms")
            print(f"| {LABELS[v]}{failed} | {med} | {rng} | {ratio} | {dt_med} ({dt_rng}) | "
                  f"{rd_med} ({rd_rng}) | {rs_med} ({rs_rng}) | {kept} | {weights} |")
    agent = [r["agent_total_ms"] for r in results["in-place"] if r["agent_total_ms"] is not None]
    if agent:
        med, rng = med_range(agent, unit=" ms")
        print(f"muster's own event=in_place_recovered total_ms on the first agent (from its pausing "
              f"the workers to every worker joined; without the detection and the first step): "
              f"median {med} ({rng})")
    print(TORCHRUN_ELASTIC)
    rs = results["in-place"]
    missed = []
    target_ms = ELASTIC_TARGET_MS.get(fault)
    if fault == "agent-kill":
        print(f"target: agent SIGKILL every rank stepping again <= {target_ms:.0f} ms (p50); steps "
              f"redone <= {TARGET_REDONE}; survivors' processes unchanged")
    elif fault in ("agent-stop", "link-down"):
        print(f"target: {'agent SIGSTOP' if fault == 'agent-stop' else 'link down'} steps redone <= "
              f"{TARGET_REDONE}; survivors' processes unchanged (no time target: the daemon "
              f"declares a silent node dead only after its heartbeat_timeout, 1.25 s)")
    else:
        print(f"target: node joining: joiner stepping <= {target_ms:.0f} ms after its round closes "
              f"(p50); first node's processes unchanged")
    if len(rs) < args.runs:
        missed.append(f"{args.runs - len(rs)} of {args.runs} runs failed")
    if rs:
        p50 = statistics.median([r["ms"] for r in rs])
        if target_ms is not None and p50 > target_ms:
            missed.append(f"stepping p50 {p50:.0f} ms > {target_ms:.0f} ms")
        if fault != "node-join" and any(r["redone"] > TARGET_REDONE for r in rs):
            missed.append(f"steps redone up to {max(r['redone'] for r in rs)}")
        if any(r["restarted"] != 0 for r in rs):
            missed.append("processes restarted " + ",".join(str(r["restarted"]) for r in rs))
        if not all(r["survivors_kept"] for r in rs):
            missed.append("a survivor's pid changed")
    return print_verdict(missed, failures)


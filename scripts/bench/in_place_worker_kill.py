"""recovery_inplace.py --fault worker-kill (the default): one node, a worker SIGKILLed.

One node, P workers (default 4), CPU/Gloo. Three variants, alternated, --runs
each (default 5):

  in-place  muster --recovery in-place running muster-train
  restart   muster --recovery restart running muster-train with --checkpoint-dir
            and --checkpoint-every C (default 20)
  torchrun  the reference: torchrun 1.13 (torchrun_compat.py, --monitor_interval
            0.1, --max_restarts 1) running a torch DDP trainer (written by this
            script, same MLP shape as muster-train's defaults) that saves a
            checkpoint every C steps and resumes from it

Every launcher gets --max-restarts 1; muster-train and the torch trainer both
run with --log-every 1 and a --step-sleep-ms (default 20) so that one step
takes a few tens of ms and the kill lands mid-run. Rank 0 prints
"step=N ..." after each step (a step ends with an allreduce over all ranks, so
rank 0 printing step N means every rank finished it), and "recovered in place
at step S ..." or "resumed from step S ..." when the job goes on after a
failure. The bench reads the launcher's stdout unbuffered and stamps each line
as it arrives.

Once rank 0 has printed step K (default 30, not a multiple of C, so that the
restart path redoes steps), the bench finds the workers (the launcher's
children, /proc/PID/task/*/children, rank from RANK in /proc/PID/environ) and
SIGKILLs rank 1 itself. Measured per run:

  stepping again   kill -> rank 0 prints the first step after the
                   recovered/resumed line (every rank stepping again)
  steps redone     last step rank 0 printed before that line (normally K)
                   minus the step the job went on from
  past the killed step again
                   kill -> rank 0 prints the first step beyond the last one it
                   printed before the kill (the lost progress regained)
  restarted        ranks whose worker pid changed between just before the kill
                   and the first step after recovery
  survivors kept   (in-place) every rank but 1 has the pid it had before

Also: muster's own event=in_place_recovered total_ms (stderr), and for in-place
and restart that the final weights (--out) equal, byte for byte, those of a
fault-free muster-train run with the same flags, run once at the start.

Target for in-place: every rank stepping again <= 150 ms (p50), steps redone
<= 1, one process restarted (every run).
"""
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import Interrupted, alive, log  # noqa: E402
from in_place_runs import (JOIN_RE, LABELS, MUSTER, PREFIX_RE, PYTHON,  # noqa: E402
                           RECOVERED_RE, RESUMED_RE, RUN_DIRS, STEP_RE, TARGET_REDONE,
                           TOTAL_MS_RE, TRAIN, RunFailed, base_env, cleanup, med_range,
                           print_verdict, run_alternated, startup_ms, workers)
from testlib.torch_refs import COMPAT  # noqa: E402

VICTIM = 1  # the rank the bench kills
RUN_TIMEOUT = 45.0  # seconds for one run, start to exit
TARGET_MS, TARGET_RESTARTED = 150.0, 1
REF_TRAINER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "in_place_ref_trainer.py")


def command(variant, args, run_dir, out_file, inject_free=True):
    train_flags = ["--backend", "gloo", "--steps", str(args.steps), "--step-sleep-ms",
                   str(args.step_sleep_ms), "--log-every", "1", "--out", out_file]
    if variant in ("in-place", "restart", "fault-free"):
        recovery = "in-place" if variant == "in-place" else "restart"
        cmd = [MUSTER, "--nproc-per-node", str(args.nproc), "--max-restarts", "1",
               "--recovery", recovery, "--no-python", TRAIN] + train_flags
        if variant == "restart":
            cmd += ["--checkpoint-dir", os.path.join(run_dir, "ckpt"),
                    "--checkpoint-every", str(args.checkpoint_every)]
        return cmd
    os.makedirs(os.path.join(run_dir, "ckpt"))
    return [PYTHON, COMPAT, "--standalone", "--nproc_per_node", str(args.nproc),
            "--max_restarts", "1", "--monitor_interval", "0.1", REF_TRAINER,
            "--steps", str(args.steps), "--step-sleep-ms", str(args.step_sleep_ms),
            "--checkpoint-dir", os.path.join(run_dir, "ckpt"),
            "--checkpoint-every", str(args.checkpoint_every)]


def one_run(variant, args, reference_weights=None, tag=""):
    """Runs one job; SIGKILLs rank 1 after rank 0 printed step --kill-step unless variant is
    "fault-free". Returns a dict of measurements (and "weights" for the fault-free run)."""
    run_dir = tempfile.mkdtemp(prefix=f"muster-bench-inplace-{variant}-")
    RUN_DIRS.append(run_dir)
    kill_t = None
    out_file = os.path.join(run_dir, "weights.bin")
    err_path = os.path.join(run_dir, "launcher.err")
    proc, known = None, set()
    lines = []  # (t, rank or None, text), every stdout line
    try:
        cmd = command(variant, args, run_dir, out_file)
        try:
            with open(err_path, "w") as err:
                proc = subprocess.Popen(cmd, env=base_env(), cwd=run_dir, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=err, bufsize=0,
                                        start_new_session=True)
        except OSError as e:
            raise RunFailed(f"cannot start {cmd[0]}: {e}")
        fd = proc.stdout.fileno()
        fault = variant != "fault-free"
        before = after = None  # {rank: pid}
        boundary = None  # (t, step the job went on from) once the recovered/resumed line came
        first_after = None  # (t, step)
        caught_up = None  # t of the first step past last_before_kill after the recovery
        last_before_kill = 0  # highest step rank 0 printed before the kill
        last_before_recovery = 0  # ... before the recovered/resumed line
        last_step = 0  # the last step rank 0 printed
        steps_before = []  # arrival times of step lines before the kill
        buf = b""
        deadline = time.monotonic() + RUN_TIMEOUT
        eof = False
        while not eof:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunFailed(f"no exit within {RUN_TIMEOUT:.0f} s")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            t = time.monotonic()
            if not chunk:
                eof = True
                chunk = b"\n" if buf else b""
            buf += chunk
            *complete, buf = buf.split(b"\n")
            for raw in complete:
                text = raw.decode(errors="replace")
                m = PREFIX_RE.match(text)
                rank = int(m.group(1)) if m else None
                if m:
                    text = text[m.end():]
                lines.append((t, rank, text))
                if rank not in (None, 0):
                    continue
                sm = STEP_RE.match(text)
                rm = RECOVERED_RE.match(text) or RESUMED_RE.match(text)
                if kill_t is not None and boundary is None:
                    if rm:
                        boundary = (t, int(rm.group(1)))
                        continue
                    if sm and int(sm.group(1)) <= last_before_recovery:
                        # started over without a recovered/resumed line: from step 0
                        boundary = (t, int(sm.group(1)) - 1)
                if not sm:
                    continue
                step = int(sm.group(1))
                last_step = step
                if kill_t is None:
                    last_before_kill = max(last_before_kill, step)
                    steps_before.append(t)
                if boundary is None:
                    last_before_recovery = max(last_before_recovery, step)
                else:
                    if first_after is None:
                        first_after = (t, step)
                        after = workers(proc.pid, args.nproc)
                        known.update(after.values())
                    if caught_up is None and step > last_before_kill:
                        caught_up = t
                if fault and kill_t is None and step == args.kill_step:
                    before = workers(proc.pid, args.nproc)
                    known.update(before.values())
                    if len(before) != args.nproc or VICTIM not in before:
                        raise RunFailed(f"found workers {before}, expected ranks 0..{args.nproc - 1}")
                    kill_t = time.monotonic()
                    os.kill(before[VICTIM], signal.SIGKILL)
        try:
            rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RunFailed(f"stdout closed but the launcher did not exit within {RUN_TIMEOUT:.0f} s")
        if rc != 0:
            raise RunFailed(f"launcher exited with status {rc}")
        if last_step != args.steps:
            raise RunFailed(f"rank 0's last step was {last_step}, not {args.steps}")
        weights = None
        if variant != "torchrun":
            try:
                with open(out_file, "rb") as f:
                    weights = f.read()
            except OSError as e:
                raise RunFailed(f"no weights file: {e}")
        gaps = [b - a for a, b in zip(steps_before, steps_before[1:])]
        result = {"step_ms": statistics.median(gaps) * 1000 if gaps else None, "weights": weights}
        if not fault:
            return result
        if kill_t is None:
            raise RunFailed(f"rank 0 never printed step {args.kill_step}")
        if boundary is None or first_after is None:
            raise RunFailed("no step after a recovered/resumed line")
        with open(err_path, errors="replace") as f:
            err_text = f.read()
        total = [float(x) for x in TOTAL_MS_RE.findall(err_text)]
        joined = [int(x) for x in JOIN_RE.findall(err_text)]
        ranks = sorted(set(before) | set(after))
        changed = [r for r in ranks if before.get(r) != after.get(r)]
        old_alive = [r for r in changed if r in before and alive(before[r])]
        result.update({
            "ms": (first_after[0] - kill_t) * 1000,
            "caught_up_ms": None if caught_up is None else (caught_up - kill_t) * 1000,
            "redone": last_before_recovery - boundary[1],
            "last_before_kill": last_before_kill,
            "went_on_from": boundary[1],
            "first_step_after": first_after[1],
            "restarted": len(changed),
            "survivors_kept": all(before[r] == after.get(r) for r in before if r != VICTIM),
            "old_pids_alive": old_alive,
            "agent_total_ms": total[0] if total else None,
            "agent_restarted": joined[0] if joined else None,
            "weights_equal": None if weights is None else weights == reference_weights,
        })
        if variant != "torchrun" and not result["weights_equal"]:
            raise RunFailed(f"final weights differ from the fault-free run's "
                            f"({len(weights)} vs {len(reference_weights)} bytes)")
        return result
    except RunFailed as e:
        tail = "\n".join(f"    [rank{r}]: {x}" if r is not None else f"    {x}" for _, r, x in lines[-15:])
        try:
            with open(err_path, errors="replace") as f:
                err_tail = "".join("    " + x for x in f.readlines()[-15:])
        except OSError:
            err_tail = ""
        raise RunFailed(f"{LABELS.get(variant, variant)}: {e}\n  stdout tail:\n{tail}\n"
                        f"  stderr tail:\n{err_tail}") from None
    finally:
        cleanup(proc, known, run_dir)
        if proc is not None and proc.stdout:
            proc.stdout.close()
        if args.keep:
            # stdout with arrival times relative to the kill (or to the first line)
            zero = kill_t if kill_t is not None else (lines[0][0] if lines else 0.0)
            with open(os.path.join(run_dir, "stdout.txt"), "w") as f:
                for t, r, x in lines:
                    f.write(f"{(t - zero) * 1000:+10.1f} ms " + (f"[rank{r}]: " if r is not None else "")
                            + x + "\n")
            os.makedirs(args.keep, exist_ok=True)
            shutil.move(run_dir, os.path.join(args.keep, f"{tag}{variant}"))
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


def worker_kill_main(args):
    """--fault worker-kill: in-place, restart and (unless --torchrun none) torchrun,
    alternated; prints the table and the target's verdict."""
    variants = ["in-place", "restart"] + (["torchrun"] if args.torchrun != "none" else [])
    t0 = time.monotonic()
    try:
        start_ms = startup_ms()
        try:
            ref = one_run("fault-free", args)
        except RunFailed as e:
            log(f"fault-free run failed: {e}")
            return 1
        log(f"fault-free run: {args.steps} steps, step interval median {ref['step_ms']:.1f} ms, "
            f"{len(ref['weights'])} bytes of weights")
        def describe(r):
            extra = ""
            if r["agent_total_ms"] is not None:
                extra = f", muster total_ms={r['agent_total_ms']:.0f}"
            caught = "-" if r["caught_up_ms"] is None else f"{r['caught_up_ms']:.0f}"
            return (f"stepping again after {r['ms']:.0f} ms, past step "
                    f"{r['last_before_kill']} after {caught} ms; last step "
                    f"before kill {r['last_before_kill']}, went on from {r['went_on_from']} "
                    f"(redone {r['redone']}), first step after {r['first_step_after']}; "
                    f"restarted {r['restarted']}, survivors kept pids {r['survivors_kept']}"
                    f"{extra}; weights equal {r['weights_equal']}")

        results, failures = run_alternated(
            args, variants, lambda v, tag: one_run(v, args, ref["weights"], tag=tag), describe)
    except Interrupted as e:
        log(f"interrupted ({e})")
        return 130

    print(f"worker SIGKILL of rank 1 at step {args.kill_step} of {args.steps}, {args.nproc} workers on "
          f"one node, CPU/Gloo, step sleep {args.step_sleep_ms} ms (fault-free step interval "
          f"{ref['step_ms']:.1f} ms), checkpoint every {args.checkpoint_every} steps (restart variants), "
          f"{args.runs} alternated runs, {time.monotonic() - t0:.0f} s")
    print("| variant | every rank stepping again: median | min-max | vs in-place | steps redone: "
          "median (min-max) | past the killed step again: median (min-max, vs in-place) | processes restarted: "
          "median (min-max) | survivors kept pids | final weights == fault-free |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    base = statistics.median([r["ms"] for r in results["in-place"]]) if results["in-place"] else None
    base_cu = [r["caught_up_ms"] for r in results["in-place"] if r["caught_up_ms"] is not None]
    base_cu = statistics.median(base_cu) if base_cu else None
    for v in variants:
        rs = results[v]
        n_failed = args.runs - len(rs)
        if not rs:
            print(f"| {LABELS[v]} | all {args.runs} runs failed | | | | | | | |")
            continue
        ms = [r["ms"] for r in rs]
        med, rng = med_range(ms, unit=" ms")
        ratio = f"{statistics.median(ms) / base:.1f}x" if base else "-"
        rd_med, rd_rng = med_range([r["redone"] for r in rs])
        rs_med, rs_rng = med_range([r["restarted"] for r in rs])
        cu = [r["caught_up_ms"] for r in rs if r["caught_up_ms"] is not None]
        cu_med, cu_rng = med_range(cu, unit=" ms")
        if cu and base_cu:
            cu_rng += f", {statistics.median(cu) / base_cu:.1f}x"
        kept = (f"{sum(r['survivors_kept'] for r in rs)}/{len(rs)}" if v == "in-place"
                else f"{sum(r['survivors_kept'] for r in rs)}/{len(rs)} (not expected)")
        weights = ("n/a (torch trainer)" if v == "torchrun"
                   else f"{sum(bool(r['weights_equal']) for r in rs)}/{len(rs)}")
        failed = f" ({n_failed} failed)" if n_failed else ""
        print(f"| {LABELS[v]}{failed} | {med} | {rng} | {ratio} | {rd_med} ({rd_rng}) | "
              f"{cu_med} ({cu_rng}) | {rs_med} ({rs_rng}) | {kept} | {weights} |")
    agent = [r["agent_total_ms"] for r in results["in-place"] if r["agent_total_ms"] is not None]
    if agent:
        med, rng = med_range(agent, unit=" ms")
        print(f"muster's own event=in_place_recovered total_ms (from its noticing the exit to every "
              f"worker joined; without the detection and the first step): median {med} ({rng})")
    if start_ms is not None:
        print(f"muster-train start-up alone (`muster-train --help`, exec to exit; the restarted "
              f"worker pays it before it can join): median {start_ms:.0f} ms")
    print(f"target: worker SIGKILL every rank stepping again <= {TARGET_MS:.0f} ms (p50); "
          f"steps redone <= {TARGET_REDONE}; one process restarted")
    rs = results["in-place"]
    missed = []
    if len(rs) < args.runs:
        missed.append(f"{args.runs - len(rs)} of {args.runs} runs failed")
    if rs:
        p50 = statistics.median([r["ms"] for r in rs])
        if p50 > TARGET_MS:
            missed.append(f"stepping again p50 {p50:.0f} ms > {TARGET_MS:.0f} ms")
        if any(r["redone"] > TARGET_REDONE for r in rs):
            missed.append(f"steps redone up to {max(r['redone'] for r in rs)}")
        if any(r["restarted"] != TARGET_RESTARTED for r in rs):
            missed.append("processes restarted " + ",".join(str(r["restarted"]) for r in rs))
        if not all(r["survivors_kept"] for r in rs):
            missed.append("a survivor's pid changed")
    return print_verdict(missed, failures)

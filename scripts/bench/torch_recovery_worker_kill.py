"""torch_recovery.py --scenario worker-kill: one worker SIGKILLed mid-training, until
every rank steps again."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_scenarios import RunError  # noqa: E402
from torch_recovery_runs import MUSTER_COLUMNS, muster_cmd, phases_of, progress, torchrun_cmd, warm_info  # noqa: E402


def worker_kill(args, column, run):
    n = args.nproc
    if column in MUSTER_COLUMNS:
        cmd, env = muster_cmd(args, column, ["--standalone", "--nproc-per-node", str(n),
                                             "--max-restarts", "3"], run)
    else:
        cmd, env = torchrun_cmd(args, column, ["--standalone", "--nproc_per_node", str(n),
                                               "--max_restarts", "3", "--monitor_interval", "0.1"], run)
    launcher = run.spawn(cmd, env, "launcher")
    tr = run.traces
    run.wait(f"every rank at step {args.kill_after_step}",
             lambda: tr.all_stepping(n, args.kill_after_step), args.timeout, [launcher])
    victim = tr.current(n)[1]
    killed_at = time.time()
    os.kill(victim.pid, signal.SIGKILL)
    muster = column in MUSTER_COLUMNS
    try:
        group = run.wait("every rank stepping in a new attempt", lambda: tr.new_group(n, killed_at),
                         args.timeout if muster else args.window, [launcher])
    except RunError as exc:
        exc.args = (f"{exc.args[0]} ({progress(tr, n, killed_at)})",)
        if muster:
            raise
        return {"none": f"did not restart: {exc.args[0]}"}
    res = phases_of(group, killed_at)
    res["resumed_at"] = min(w.first_step[0] for w in group.values())
    if column in MUSTER_COLUMNS:
        res.update(warm_info(run, list(tr.workers.values())))
    return res



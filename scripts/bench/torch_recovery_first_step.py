"""torch_recovery.py --scenario first-step: from the launch to every rank's first step,
and the workers' memory."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from torch_recovery_runs import MUSTER_COLUMNS, memory, muster_cmd, phases_of, torchrun_cmd, warm_info  # noqa: E402


def first_step(args, column, run, nproc):
    if column in MUSTER_COLUMNS:
        cmd, env = muster_cmd(args, column, ["--standalone", "--nproc-per-node", str(nproc)], run)
    else:
        cmd, env = torchrun_cmd(args, column, ["--standalone", "--nproc_per_node", str(nproc),
                                               "--monitor_interval", "0.1"], run)
    launched_at = time.time()
    launcher = run.spawn(cmd, env, "launcher")
    tr = run.traces
    group = run.wait("every rank's first step", lambda: tr.new_group(nproc, 0), args.timeout,
                     [launcher])
    res = phases_of(group, launched_at)
    run.wait(f"every rank at step {args.rss_step}", lambda: tr.all_stepping(nproc, args.rss_step),
             args.timeout, [launcher])
    mems = [memory(w.pid) for w in tr.current(nproc).values()]
    for key in ("rss", "pss", "private"):
        values = [m[key] for m in mems if key in m]
        if values:
            res["worker_" + key] = statistics.median(values)
    if column in MUSTER_COLUMNS:
        res.update(warm_info(run, list(tr.workers.values())))
        if res["ready"]:
            pid, rss_mib, import_s = res["ready"][0]
            if rss_mib == rss_mib:  # not NaN
                res["warm_rss_log"] = rss_mib
            if import_s == import_s:
                res["warm_import_s"] = import_s
            wm = memory(pid)
            for key in ("rss", "pss", "private"):
                if key in wm:
                    res["warm_" + key] = wm[key]
    return res



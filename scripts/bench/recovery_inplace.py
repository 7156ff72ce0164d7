"""Worker SIGKILL, agent SIGKILL/SIGSTOP, node joining, a node's link down mid-training: muster --recovery in-place vs a restart from a checkpoint.

usage: recovery_inplace.py [--fault worker-kill|agent-kill|agent-stop|node-join|link-down]
                           [--runs N] [--nproc P] [--kill-step K] [--checkpoint-every C]
                           [--steps S] [--step-sleep-ms MS] [--torchrun 1.13|none] [--keep DIR]

--fault worker-kill (the default) is described first; the elastic faults
(agent-kill, agent-stop, node-join, link-down) after it.

The worker-kill benchmark is in_place_worker_kill.py, the elastic faults' in
in_place_elastic.py; their descriptions follow.

Exit status: 0; 1 when a run failed (launcher exit status, timeout, no recovery
seen, weights differ from the fault-free run) or the in-place target is missed;
130 when interrupted. Every process started is killed (process groups
included; muster's workers run in their own sessions) in `finally`.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import interrupt_on_signals  # noqa: E402
import in_place_elastic  # noqa: E402
import in_place_worker_kill  # noqa: E402
from in_place_elastic import ELASTIC_FAULTS  # noqa: E402
from in_place_elastic_report import elastic_main  # noqa: E402
from in_place_runs import MUSTER, TRAIN, check_leftovers  # noqa: E402
from in_place_worker_kill import worker_kill_main  # noqa: E402
from testlib import netns  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=(__doc__.split("\n\n", 2)[2] + "\n" +
                                             in_place_worker_kill.__doc__ + "\n" +
                                             in_place_elastic.__doc__))
    parser.add_argument("--fault", default="worker-kill", choices=("worker-kill",) + ELASTIC_FAULTS,
                        help="worker-kill (default): SIGKILL rank 1 on one node; agent-kill, "
                             "agent-stop, node-join, link-down: two agents forming one elastic job "
                             "(link-down: the second in its own network namespace; needs root)")
    parser.add_argument("--runs", type=int, default=5, help="alternated runs per variant (default 5)")
    parser.add_argument("--nproc", type=int, default=None,
                        help="workers on the node (default 4); with an elastic --fault, workers "
                             "per agent (default 2)")
    parser.add_argument("--kill-step", type=int, default=30,
                        help="SIGKILL rank 1 once rank 0 printed this step (default 30); elastic "
                             "faults: the first step at which the second agent is killed/stopped "
                             "or its link set down (at world size 2 x --nproc) or started "
                             "(node-join)")
    parser.add_argument("--checkpoint-every", type=int, default=20,
                        help="steps between checkpoints of the restart variants (default 20)")
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps (default 70; 120 for agent-stop, whose stopped "
                             "agent's workers may step on until the node is declared dead; 250 for "
                             "node-join, whose newcomer is admitted about 2 s after it starts)")
    parser.add_argument("--step-sleep-ms", type=int, default=20,
                        help="muster-train/trainer --step-sleep-ms (default 20)")
    parser.add_argument("--torchrun", default="1.13", choices=("1.13", "none"),
                        help="the reference: torchrun 1.13, or none (default 1.13)")
    parser.add_argument("--keep", metavar="DIR", default="",
                        help="keep each run's directory under DIR: the launcher's stderr "
                             "(launcher.err) and stdout with arrival times from the kill (stdout.txt)")
    args = parser.parse_args()
    elastic = args.fault in ELASTIC_FAULTS
    if args.nproc is None:
        args.nproc = 2 if elastic else 4
    if args.steps is None:
        args.steps = {"node-join": 250, "agent-stop": 120}.get(args.fault, 70)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not 0 < args.kill_step < args.steps - 5:
        parser.error("--kill-step must lie inside the run, at least 5 steps before its end")
    if args.nproc < (1 if elastic else 2):
        parser.error("--nproc must be at least 1" if elastic
                     else "--nproc must be at least 2 (rank 1 is killed)")
    if args.checkpoint_every <= 0 or (not elastic and args.checkpoint_every > args.kill_step):
        parser.error("--checkpoint-every must be positive" +
                     ("" if elastic else " and at most --kill-step"))
    for path in (MUSTER, TRAIN):
        if not os.access(path, os.X_OK):
            sys.exit(f"recovery_inplace.py: {path} is missing; build first")
    if args.fault == "link-down" and netns.unavailable_reason():
        sys.exit(f"recovery_inplace.py: --fault link-down {netns.unavailable_reason()}")
    interrupt_on_signals()
    if elastic:
        return elastic_main(args)

    return worker_kill_main(args)


if __name__ == "__main__":
    status = 1
    try:
        status = main()
    finally:
        if check_leftovers() and status == 0:
            status = 1
    sys.exit(status)

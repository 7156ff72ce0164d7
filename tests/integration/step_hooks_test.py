"""Progress from unmodified PyTorch scripts (launcher/process/warm/step_hooks.py),
on every torch version the project targets (torch_versions.py): an ordinary DDP
loop (tests/torch/ddp_steps.py) that imports nothing of muster.

- Under warm workers (the default) its optimizer steps reach musterd: the
  nodes' step rates show in /status.json (torch_straggler_test.py's elastic
  run).
- `--inject kill-worker,rank=1,step=N` fires on the script's step N, and the
  start-up warning that it may never fire is gone; cold workers
  (--no-warm-workers) get no hooks, and keep the warning.
- Goodput: the run that hung trained a smaller share of its time than the same
  run without the hang; each run's parts add up to its wall time.
- Hangs, by default (--hang-timeout auto): a rank that sleeps forever at step
  30 of 100 ms steps is reported within 30 s, named with the line it is stuck
  on, its stacks written; the job restarts and finishes. A fault-free run
  with a 15 s save step that every rank takes, and the ranks' teardown after
  their last step, report nothing.

Every process is started through the harness and killed by PID when its test
ends, pass or fail.
"""
import datetime
import os
import re

from harness import TORCH_SCRIPTS, check, run_muster, run_tests, tempdir
from torch_versions import each_version

STEPS = os.path.join(TORCH_SCRIPTS, "ddp_steps.py")


def inject_run(version, warm):
    args = ["--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
            "--inject", "kill-worker,rank=1,step=5"]
    if not warm:
        args.append("--no-warm-workers")
    return run_muster(args + [STEPS, "--steps", "30"], env=version.env(), timeout=180)


@each_version
def a_step_triggered_fault_fires_on_an_unmodified_script(version):
    code, out, err = inject_run(version, warm=True)
    check(code == 0, f"muster exit {code}", err)
    fired = [line for line in err.splitlines() if "event=inject index=0" in line]
    check(len(fired) == 1, "the fault fired once", err)
    found = re.search(r'trigger="step=(\d+) \(rank 1\)"', fired[0])
    check(found and 5 <= int(found.group(1)) <= 7, "it fired at step 5", fired[0])
    check("may never fire" not in err and "never fired" not in err, "a warning about it", err)
    check("restarting" in err.lower() or "restart" in err, "the job restarted after it", err)
    check("STEPS_DONE 30" in out, "the restarted job finished", out + err)


@each_version
def cold_workers_get_no_hooks_and_keep_the_warning(version):
    code, out, err = inject_run(version, warm=False)
    check(code == 0, f"muster exit {code}", err)
    check("may never fire" in err and "event=inject index=0" not in err,
          "cold: the warning, and no fault", err)
    check("STEPS_DONE 30" in out, "the job finished", out + err)


def failure_time(err):
    """The failure report's `time` of the root cause, as a Unix time."""
    found = re.search(r"time       : (\S+)Z", err)
    check(found, "no failure time in the report", err)
    stamp = datetime.datetime.fromisoformat(found.group(1)).replace(tzinfo=datetime.timezone.utc)
    return stamp.timestamp()


@each_version
def a_rank_stuck_at_step_30_is_named_with_its_line_and_the_job_recovers(version):
    log_dir = tempdir()
    code, out, err = run_muster(
        ["--standalone", "--nproc-per-node", "3", "--max-restarts", "1", "--log-dir", log_dir,
         STEPS, "--steps", "50", "--step-seconds", "0.1", "--hang-rank", "1", "--hang-step", "30"],
        env=version.env(), timeout=240)
    check(code == 0, f"muster exit {code}", err)
    check("STEPS_DONE 50" in out, "the restarted job finished", out + err)
    began = re.search(r"HANG_BEGIN (\d+\.\d+)", err)
    check(began, "the rank did not hang", err)
    took = failure_time(err) - float(began.group(1))
    check(took <= 30, f"reported {took:.1f}s after the rank stopped (target 30 s)", err)
    hang = [line for line in err.splitlines() if "event=hang " in line]
    check(len(hang) == 1, "one hang verdict", err)
    # The rank and the line it is stuck on (hang_forever's sleep), and where
    # the others wait (their backward's all-reduce).
    check(re.search(r'rank 1 at File "[^"]*ddp_steps\.py", line \d+ in hang_forever', hang[0]),
          "the verdict names rank 1 and its line", hang[0])
    check("the others at File" in hang[0], "the verdict says where the others wait", hang[0])
    check(re.search(r"stuck at   : File .*ddp_steps\.py.* in hang_forever", err),
          "the report gives the culprit's frames", err)
    stacks = re.search(r"stacks     : (\S+)", err)
    check(stacks and os.path.isfile(stacks.group(1)), "the stacks file", err)
    with open(stacks.group(1)) as f:
        text = f.read()
    for rank in range(3):
        check(f"== rank {rank} " in text, f"rank {rank}'s stacks", text)
    check("in hang_forever" in text and "thread 0x" in text, "the dumps", text)

    # Goodput: the same run without the hang trained a larger share of its
    # time; each run's parts add up to its wall time.
    hung = goodput(err)
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "3", STEPS, "--steps", "50",
                                 "--step-seconds", "0.1"], env=version.env(), timeout=240)
    check(code == 0 and "STEPS_DONE 50" in out, f"muster exit {code}", err)
    clean = goodput(err)
    print(f"goodput: hung {hung}\n         fault-free {clean}", flush=True)
    check(0 < hung["ratio"] < clean["ratio"] < 1, "goodput not lower with the fault", hung, clean)
    check(hung["downtime_s"] >= 20 and hung["attempts"] == 2, "the hang's downtime", hung)
    check(hung["redone_s"] > 0, "steps 1..29 were done again", hung)
    check(clean["downtime_s"] == 0 and clean["redone_s"] == 0 and clean["attempts"] == 1,
          "a fault-free run lost nothing", clean)
    # 5 s of steps (50 x 0.1 s), the first excluded.
    check(4 <= clean["productive_s"] <= 6, "the fault-free run's productive time", clean)


def goodput(err):
    """The run's `event=goodput` line, as numbers."""
    found = re.search(r"muster: event=goodput (.*)", err)
    check(found, "no goodput line", err)
    values = dict(item.split("=") for item in found.group(1).split())
    parsed = {key: float(value) for key, value in values.items()}
    parts = sum(parsed[k] for k in ("productive_s", "to_first_step_s", "downtime_s", "redone_s",
                                    "tail_s"))
    check(abs(parts - parsed["wall_s"]) <= 0.3, "the parts do not add up to the wall time", parsed)
    return parsed


@each_version
def a_fault_free_run_with_a_15_s_save_step_reports_no_hang(version):
    code, out, err = run_muster(
        ["--standalone", "--nproc-per-node", "3", STEPS, "--steps", "40", "--step-seconds", "0.1",
         "--save-step", "20", "--save-seconds", "15"], env=version.env(), timeout=240)
    check(code == 0, f"muster exit {code}", err)
    check("STEPS_DONE 40" in out, "the job finished", out + err)
    check("event=hang" not in err, "a hang was suspected in a fault-free run", err)
    # Three ranks stepping alike: none is the slow one (the 15 s step is
    # every rank's).
    check("event=straggler " not in err, "a straggler in a fault-free run", err)


if __name__ == "__main__":
    run_tests()

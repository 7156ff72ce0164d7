#!/usr/bin/python3 -S
"""Worker wrapper for the chaos suite: records who it is, then becomes muster-train.

usage: chaos_worker.py RECORD_DIR TRAIN [TRAIN_ARGS...]

When RECORD_DIR/steps exists, its number replaces the value of --steps in
TRAIN_ARGS: the driver fixes the job's length only at the end of its fault
window (the step count changes no weight: muster-train has no schedule tied to
it, and a checkpoint does not record it).

Writes RECORD_DIR/g<gen>_r<rank>.json (gen = TORCHELASTIC_RESTART_COUNT + 1, the
daemon's generation number) holding its generation, rank, world size, group rank,
pid, parent (agent) pid, host index (CHAOS_HOST, set by the driver on the agent),
its start time, its kernel start time (so a reused pid is never mistaken for it)
and "overlap": the workers of EARLIER generations that were still alive when it
started (the approach of tests/integration/workers/gen_dump.py). Then it execs
TRAIN with TRAIN_ARGS: the pid stays the same, so the record names the trainer.
Runs with -S (no site module): it starts in a few milliseconds.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
from testlib.procs import start_ticks as proc_start_ticks  # noqa: E402


def write_record(record_dir, train_args):
    """Writes this process's record (the module docstring's fields) to
    RECORD_DIR/g<gen>_r<rank>.json; returns train_args with --steps replaced
    by RECORD_DIR/steps when that file exists. chaos_torch_worker.py calls
    it too, before it runs a torch script in the same process."""
    env = os.environ
    gen = int(env["TORCHELASTIC_RESTART_COUNT"]) + 1
    rank = int(env["RANK"])
    overlap = []
    for name in os.listdir(record_dir):
        if not (name.startswith("g") and name.endswith(".json")):
            continue
        try:
            other_gen = int(name[1:].split("_")[0])
            with open(os.path.join(record_dir, name)) as f:
                other = json.load(f)
        except (ValueError, OSError):
            continue
        if other_gen < gen and proc_start_ticks(other["pid"]) == other["ticks"]:
            overlap.append({"gen": other_gen, "rank": other["rank"], "pid": other["pid"],
                            "host": other["host"]})
    train_args = list(train_args)
    try:
        with open(os.path.join(record_dir, "steps")) as f:
            steps = str(int(f.read().strip()))
        if "--steps" in train_args:
            train_args[train_args.index("--steps") + 1] = steps
    except (OSError, ValueError):
        pass
    steps = train_args[train_args.index("--steps") + 1] if "--steps" in train_args else None
    record = {"gen": gen, "rank": rank, "pid": os.getpid(), "ppid": os.getppid(),
              "ticks": proc_start_ticks(os.getpid()), "start": time.time(),
              "world_size": int(env["WORLD_SIZE"]), "group_rank": int(env["GROUP_RANK"]),
              "group_world_size": int(env["GROUP_WORLD_SIZE"]),
              "master": f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}",
              "host": int(env.get("CHAOS_HOST", "0")), "steps": steps, "overlap": overlap}
    tmp = os.path.join(record_dir, f".g{gen}_r{rank}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.rename(tmp, os.path.join(record_dir, f"g{gen}_r{rank}.json"))
    return train_args


def main():
    record_dir, train = sys.argv[1], sys.argv[2]
    train_args = write_record(record_dir, sys.argv[3:])
    os.execv(train, [train] + train_args)


if __name__ == "__main__":
    main()

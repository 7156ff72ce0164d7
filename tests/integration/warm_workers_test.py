"""Warm workers (launcher/process/warm_process.h): Python workers forked from the
node's warm process see what a cold start (--no-warm-workers) sees, field by
field, and a script that raises prints the same traceback (script, -m,
--run-path), without the warm process's frames; a warm process that cannot serve falls back to cold starts with one
event line; nothing outlives the agent's SIGKILL.

Real muster, Debian's python3 with torch 1.13; the torch tests
(torch_test.py) run every torch version warm as well."""
import json
import os
import signal

from elastic_harness import start_musterd, wait_exit
from harness import (MUSTER, PYTHON, WORKERS, base_env, check, descendants, kill_pids, kill_tree,
                     pid_alive, run_muster, run_tests, start, tempdir, test, wait_for)

STATE = os.path.join(WORKERS, "interpreter_state.py")
RAISES = os.path.join(WORKERS, "raise_nested.py")
DATALOADER = os.path.join(WORKERS, "dataloader_workers.py")
# Differ between any two runs, warm or not: the store's port, the run's
# directory and its id.
# Each names something of its own run (its port, its run's directory: the
# error file, the NCCL flight recorder's pipe), so two runs differ in them.
PER_RUN = ("MASTER_PORT", "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_RUN_ID",
           "TORCH_NCCL_DEBUG_INFO_PIPE_FILE")


def states(out_dir, ranks):
    found = {}
    for rank in range(ranks):
        with open(os.path.join(out_dir, f"rank{rank}.json")) as f:
            found[rank] = json.load(f)
    return found


def run_states(args, ranks, warm, cwd=None, env=None):
    """Runs muster with `args` (OUTDIR is appended to them by the caller via
    the returned directory's placeholder) and returns each rank's state."""
    out_dir = tempdir()
    args = [a.replace("{out}", out_dir) for a in args]
    flags = [] if warm else ["--no-warm-workers"]
    if args[0] == "launch":
        command = [MUSTER, "launch"] + flags + args[1:]
    else:
        command = [MUSTER] + flags + args
    p = start(command, env=env or base_env(MUSTER_PYTHON=PYTHON), cwd=cwd)
    out, err = p.communicate(timeout=120)
    check(p.returncode == 0, f"{'warm' if warm else 'cold'} run exited {p.returncode}", out, err)
    found = {rank: json.loads(json.dumps(state).replace(out_dir, "{out}"))
             for rank, state in states(out_dir, ranks).items()}
    for rank, state in found.items():
        check(state["ppid"] == p.pid, f"rank {rank}'s parent is {state['ppid']}, not the agent "
              f"{p.pid}", out, err)
        del state["ppid"]
        for name in PER_RUN:
            state["env"].pop(name, None)
    return found, err


def compare_warm_and_cold(args, ranks, cwd=None):
    warm, warm_err = run_states(args, ranks, warm=True, cwd=cwd)
    cold, _ = run_states(args, ranks, warm=False, cwd=cwd)
    check("event=warm_fallback" not in warm_err, "the warm run fell back", warm_err)
    for rank in range(ranks):
        check(warm[rank].pop("preloaded") is True, f"rank {rank} did not start warm")
        check(cold[rank].pop("preloaded") is False, f"rank {rank} did not start cold")
        differing = {key: (warm[rank].get(key), cold[rank].get(key))
                     for key in sorted(set(warm[rank]) | set(cold[rank]))
                     if warm[rank].get(key) != cold[rank].get(key)}
        if "env" in differing:
            w, c = differing.pop("env")
            differing["env"] = {k: (w.get(k), c.get(k)) for k in sorted(set(w) | set(c))
                                if w.get(k) != c.get(k)}
        check(not differing, f"rank {rank}: warm != cold in {json.dumps(differing, indent=1)}")
    return warm


@test
def a_script_starts_warm_exactly_as_cold():
    warm = compare_warm_and_cold(["--standalone", "--nproc-per-node", "2", STATE, "{out}",
                                  "--flag", "value"], 2)
    check(warm[0]["argv"] == [STATE, "{out}", "--flag", "value"], str(warm[0]["argv"]))
    check(warm[0]["omp_num_threads"] == "1" and warm[0]["torch_threads"] == 1, str(warm[0]))
    check(warm[0]["pdeathsig"] == signal.SIGKILL and warm[0]["session_leader"], str(warm[0]))


@test
def a_module_starts_warm_exactly_as_cold():
    compare_warm_and_cold(["--standalone", "--nproc-per-node", "1", "-m", "interpreter_state",
                           "{out}"], 1, cwd=WORKERS)


@test
def run_path_starts_warm_exactly_as_cold():
    compare_warm_and_cold(["--standalone", "--nproc-per-node", "1", "--run-path", STATE,
                           "{out}"], 1)


def traceback_of(args, warm, cwd=None):
    """(exit code, the worker's traceback: from its first line to the error's)."""
    flags = [] if warm else ["--no-warm-workers"]
    p = start([MUSTER] + flags + ["--standalone", "--nproc-per-node", "1", "--no-prefix"] + args,
              env=base_env(MUSTER_PYTHON=PYTHON), cwd=cwd)
    out, err = p.communicate(timeout=120)
    lines = err.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("Traceback")), None)
    check(first is not None, f"no traceback ({'warm' if warm else 'cold'})", out, err)
    last = next(i for i in range(first, len(lines)) if lines[i].startswith("ValueError"))
    return p.returncode, lines[first:last + 1], err


def check_same_traceback(args, cwd=None):
    warm_code, warm, warm_err = traceback_of(args, True, cwd)
    cold_code, cold, _ = traceback_of(args, False, cwd)
    check("event=warm_fallback" not in warm_err, "the warm run fell back", warm_err)
    check(warm == cold, "warm traceback != cold:\n" + "\n".join(warm) + "\n---\n" +
          "\n".join(cold))
    check(warm_code == cold_code == 1, f"exit {warm_code} warm, {cold_code} cold")
    check("<muster warm process>" not in "\n".join(warm), "\n".join(warm))
    return warm


@test
def a_scripts_traceback_is_the_same_warm_and_cold():
    lines = check_same_traceback([RAISES])
    check(lines[1] == f'  File "{RAISES}", line 14, in <module>', "\n".join(lines))


@test
def a_modules_traceback_is_the_same_warm_and_cold():
    check_same_traceback(["-m", "raise_nested"], cwd=WORKERS)


@test
def a_run_paths_traceback_is_the_same_warm_and_cold():
    check_same_traceback(["--run-path", RAISES])


@test
def the_warm_process_imports_the_scripts_and_its_modules_imports():
    script = os.path.join(WORKERS, "scan_job", "train.py")
    p = start([MUSTER, "--standalone", "--nproc-per-node", "1", "--no-prefix", script],
              env=base_env(MUSTER_PYTHON=PYTHON, MUSTER_LOG_LEVEL="info"))
    out, err = p.communicate(timeout=120)
    check(p.returncode == 0, f"exit {p.returncode}", out, err)
    ready = next((line for line in err.splitlines() if "event=warm_ready" in line), "")
    imports = ready.split("imports=[", 1)[-1].split("]", 1)[0].split(",")
    check({"decimal", "json", "sys", "fractions"} <= set(imports), ready, err)
    check("helpers" not in imports and "colorsys" not in imports,
          "the script's own module, or a function's import, was imported warm", ready)
    # MUSTER_WARM_IMPORT_SCAN=torch: torch's imports alone (this script has none).
    p = start([MUSTER, "--standalone", "--nproc-per-node", "1", "--no-prefix", script],
              env=base_env(MUSTER_PYTHON=PYTHON, MUSTER_LOG_LEVEL="info",
                           MUSTER_WARM_IMPORT_SCAN="torch"))
    out, err = p.communicate(timeout=120)
    ready = next((line for line in err.splitlines() if "event=warm_ready" in line), "")
    check(p.returncode == 0 and "imports=[]" in ready, ready, err)


@test
def muster_launch_local_rank_starts_warm_exactly_as_cold():
    warm = compare_warm_and_cold(["launch", "--standalone", "--nproc-per-node", "2", STATE,
                                  "{out}"], 2)
    check(warm[1]["argv"][1] == "--local_rank=1", str(warm[1]["argv"]))


@test
def omp_num_threads_read_at_import_is_the_workers():
    # Torch's OpenMP reads OMP_NUM_THREADS when torch is imported: in the
    # warm process, before any worker exists.
    env = base_env(MUSTER_PYTHON=PYTHON, OMP_NUM_THREADS="2")
    warm, _ = run_states(["--standalone", "--nproc-per-node", "2", STATE, "{out}"], 2, warm=True,
                         env=env)
    for rank in range(2):
        check(warm[rank]["preloaded"] and warm[rank]["omp_num_threads"] == "2" and
              warm[rank]["torch_threads"] == 2, f"rank {rank}: {warm[rank]}")


@test
def isolated_gpus_differ_per_rank_and_stay_warm():
    # CUDA reads CUDA_VISIBLE_DEVICES when it initialises, after the fork:
    # a value per rank needs no cold start.
    warm, err = run_states(["--standalone", "--nproc-per-node", "2", "--gpus", "0,1",
                            "--gpu-visibility", "isolate", STATE, "{out}"], 2, warm=True)
    check("event=warm_fallback" not in err, "fell back", err)
    for rank in range(2):
        check(warm[rank]["preloaded"] and
              warm[rank]["env"].get("CUDA_VISIBLE_DEVICES") == str(rank),
              f"rank {rank}: preloaded {warm[rank]['preloaded']}, "
              f"CUDA_VISIBLE_DEVICES {warm[rank]['env'].get('CUDA_VISIBLE_DEVICES')}")


def check_cold_with_one_event(flags, env, reason):
    """The job runs cold and says why once, naming `reason`."""
    out_dir = tempdir()
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2"] + flags +
                                [STATE, out_dir], env=env, timeout=120)
    check(code == 0, f"exit {code}", out, err)
    found = states(out_dir, 2)
    check(not any(s["preloaded"] for s in found.values()), "a worker started warm", err)
    events = [line for line in err.splitlines() if "event=warm_fallback" in line]
    check(len(events) == 1 and reason in events[0], f"events {events}", err)


@test
def a_warm_import_that_raises_runs_the_job_cold_with_one_event():
    check_cold_with_one_event(["--warm-import", "raises_at_import"],
                              base_env(MUSTER_PYTHON=PYTHON), "raises_at_import")


@test
def an_environment_json_cannot_carry_runs_the_job_cold_with_one_event():
    # Any bytes are a valid environment value; the warm process's requests
    # are JSON, which carries only UTF-8.
    check_cold_with_one_event([], base_env(MUSTER_PYTHON=PYTHON,
                                           NOT_UTF8=os.fsdecode(b"\xff\xfe")), "UTF-8")


@test
def a_dataloader_with_two_workers_runs_under_fork_and_spawn():
    for method in ("fork", "spawn"):
        out_dir = tempdir()
        code, out, err = run_muster(["--standalone", "--nproc-per-node", "2", DATALOADER, out_dir,
                                     method], env=base_env(MUSTER_PYTHON=PYTHON), timeout=120)
        check(code == 0, f"{method}: exit {code}", out, err)
        check("event=warm_fallback" not in err, f"{method}: fell back", err)
        for rank, state in states(out_dir, 2).items():
            check(state == {"sum": 2016.0, "method": method}, f"{method} rank {rank}: {state}")


def run_restarting(attempt_0, flags):
    """Runs 2 workers whose attempt 0 does `attempt_0` (Python lines after
    `import torch`) and whose attempt 1 writes its state; checks attempt 1
    came warm and returns muster's stderr."""
    out_dir = tempdir()
    script = os.path.join(out_dir, "restarting.py")
    with open(script, "w") as f:
        f.write("import os, runpy, sys, time\n"
                "import torch\n"
                "if os.environ['TORCHELASTIC_RESTART_COUNT'] == '0':\n"
                + "".join(f"    {line}\n" for line in attempt_0) +
                f"runpy.run_path({STATE!r}, run_name='__main__')\n")
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2", "--max-restarts", "1"]
                                + flags + [script, out_dir], env=base_env(MUSTER_PYTHON=PYTHON),
                                timeout=120)
    check(code == 0, f"exit {code}", out, err)
    for rank, state in states(out_dir, 2).items():
        check(state["env"]["TORCHELASTIC_RESTART_COUNT"] == "1" and state["preloaded"],
              f"rank {rank}: restart {state['env']['TORCHELASTIC_RESTART_COUNT']} "
              f"preloaded {state['preloaded']}", err)
    check("event=warm_fallback" not in err, "fell back", err)
    return err


@test
def a_failed_worker_restarts_warm():
    run_restarting(["if os.environ['RANK'] == '1':", "    sys.exit(3)"], [])


@test
def an_injected_kill_of_a_warm_worker_restarts_the_job_warm():
    # after= counts from muster's start; the warm process's torch import takes
    # up to 13 s on a loaded 2-core machine, and a fault due before the worker
    # runs is skipped. Attempt 0 sleeps 60 s, so 15 s still finds it running.
    err = run_restarting(["time.sleep(60)"], ["--inject", "kill-worker,rank=1,after=15s"])
    check(len([line for line in err.splitlines() if "event=inject " in line]) == 1,
          "the fault did not fire once", err)
    check("signal 9 (SIGKILL)" in err, "the report does not name the SIGKILL", err)


@test
def a_lost_nodes_survivors_restart_warm():
    daemon, port = start_musterd()
    out_dir = tempdir()
    script = os.path.join(out_dir, "generation.py")
    with open(script, "w") as f:
        f.write("import json, os, sys, time\n"
                "preloaded = 'torch' in sys.modules\n"
                "import torch\n"
                "name = f\"gen{os.environ['TORCHELASTIC_RESTART_COUNT']}_"
                "rank{os.environ['RANK']}_world{os.environ['WORLD_SIZE']}.json\"\n"
                "with open(os.path.join(sys.argv[1], name), 'w') as out:\n"
                "    json.dump({'preloaded': preloaded, 'ppid': os.getppid()}, out)\n"
                "if os.environ['WORLD_SIZE'] == '4':\n"
                "    time.sleep(120)\n")
    common = ["--nnodes", "1:2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
              "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "warm-survivors",
              "--rdzv-conf", "last_call_timeout=0.5", "--local-addr", "127.0.0.1"]
    agents = [start([MUSTER] + common + [script, out_dir], env=base_env(MUSTER_PYTHON=PYTHON))
              for _ in range(2)]
    try:
        first = wait_for(lambda: len([n for n in os.listdir(out_dir) if "world4" in n]) == 4, 60)
        check(first, f"the first generation never ran: {os.listdir(out_dir)}")
        agents[1].send_signal(signal.SIGKILL)
        code = wait_exit(agents[0], 60)
        out, err = agents[0].communicate()
        check(code == 0, f"the survivor exited {code}", out, err)
        survivors = [n for n in os.listdir(out_dir) if "world2" in n]
        check(len(survivors) == 2, f"files {sorted(os.listdir(out_dir))}", err)
        for name in survivors:
            with open(os.path.join(out_dir, name)) as f:
                state = json.load(f)
            check(state["preloaded"] and state["ppid"] == agents[0].pid, f"{name}: {state}", err)
        check("event=warm_fallback" not in err, "the survivor fell back", err)
    finally:
        for p in agents + [daemon]:
            if p.poll() is None:
                kill_tree(p.pid)
            p.wait()


@test
def nothing_outlives_the_agents_sigkill():
    out_dir = tempdir()
    script = os.path.join(out_dir, "sleeper.py")
    with open(script, "w") as f:
        f.write("import os, sys, time\nimport torch\n"
                "open(os.path.join(sys.argv[1], 'rank' + os.environ['RANK']), 'w').close()\n"
                "time.sleep(300)\n")
    agent = start([MUSTER, "--standalone", "--nproc-per-node", "2", script, out_dir],
                  env=base_env(MUSTER_PYTHON=PYTHON))
    processes = []
    try:
        ready = wait_for(lambda: all(os.path.exists(os.path.join(out_dir, f"rank{r}"))
                                     for r in range(2)), 60)
        check(ready, "the workers never started")
        processes = descendants(agent.pid)
        # The warm process and two workers.
        check(len(processes) == 3, f"descendants {processes}")
        agent.send_signal(signal.SIGKILL)
        agent.wait(10)
        gone = wait_for(lambda: not any(pid_alive(p) for p in processes), 10)
        check(gone, f"still alive after the agent's SIGKILL: "
              f"{[p for p in processes if pid_alive(p)]}")
    finally:
        # What the agent's death left behind (re-parented, so no longer its
        # descendants), then the agent and its tree if it still runs.
        kill_pids(processes, group=False)
        if agent.poll() is None:
            kill_tree(agent.pid)
        agent.communicate()


if __name__ == "__main__":
    run_tests()

"""torchrun and torch.distributed.launch compatibility, with real workers:
which GPU each worker gets and the LOCAL_RANK it is told, the root-cause
TORCHELASTIC_ERROR_FILE, the newest torchrun flags, and `muster launch`."""
import json
import os

from harness import (TORCH_SCRIPTS, base_env, check, read_dumps, run_log_dir, run_muster, run_tests,
                     tempdir, test, worker)

GPUS = ["--gpus", "0,1,2", "--nproc-per-node", "3"]


def dump_env(*flags, env=None):
    """Runs env_dump.py on three workers; returns their environments by RANK."""
    out = tempdir()
    code, _, stderr = run_muster(list(flags) + [worker("env_dump.py"), out], env=env)
    check(code == 0, f"exit {code}", stderr)
    dumps = read_dumps(out)
    check(sorted(dumps) == [0, 1, 2], f"ranks {sorted(dumps)}", stderr)
    return dumps


def own_gpu(env):
    """The GPU torch.cuda.set_device(int(os.environ["LOCAL_RANK"])) would use."""
    return env["CUDA_VISIBLE_DEVICES"].split(",")[int(env["LOCAL_RANK"])]


@test
def by_default_local_rank_indexes_the_whole_gpu_list():
    dumps = dump_env(*GPUS)
    for rank, env in dumps.items():
        check(env["CUDA_VISIBLE_DEVICES"] == "0,1,2", f"rank {rank}: {env['CUDA_VISIBLE_DEVICES']}")
        check(env["LOCAL_RANK"] == str(rank), f"rank {rank}: LOCAL_RANK {env['LOCAL_RANK']}")
    check(sorted(own_gpu(env) for env in dumps.values()) == ["0", "1", "2"],
          "each worker's own GPU", str(dumps))


@test
def isolate_shows_one_gpu_and_keeps_local_rank():
    dumps = dump_env(*GPUS, "--gpu-visibility", "isolate")
    for rank, env in dumps.items():
        check(env["CUDA_VISIBLE_DEVICES"] == str(rank), f"rank {rank}: {env['CUDA_VISIBLE_DEVICES']}")
        check(env["LOCAL_RANK"] == str(rank), f"rank {rank}: LOCAL_RANK {env['LOCAL_RANK']}")


@test
def virtual_local_rank_shows_one_gpu_as_local_rank_zero():
    for flags, env in ((["--virtual-local-rank"], None), (["--virtual_local_rank"], None),
                       ([], base_env(PET_VIRTUAL_LOCAL_RANK="1"))):
        dumps = dump_env(*GPUS, *flags, env=env)
        for rank, seen in dumps.items():
            check(seen["CUDA_VISIBLE_DEVICES"] == str(rank) and seen["LOCAL_RANK"] == "0",
                  f"{flags} rank {rank}: CVD {seen['CUDA_VISIBLE_DEVICES']} "
                  f"LOCAL_RANK {seen['LOCAL_RANK']}")
            check(seen["GROUP_RANK"] == "0" and seen["LOCAL_WORLD_SIZE"] == "3", "other vars")
        check(sorted(own_gpu(seen) for seen in dumps.values()) == ["0", "1", "2"],
              "each worker's own GPU", str(dumps))


@test
def virtual_local_rank_without_a_gpu_per_worker_is_refused():
    code, _, stderr = run_muster(["--gpus", "0,1", "--nproc-per-node", "3", "--virtual-local-rank",
                                  worker("env_dump.py"), tempdir()])
    check(code == 2, f"exit {code}", stderr)
    check("--virtual-local-rank: 3 workers per node but 2 GPU ids (from --gpus)" in stderr, stderr)


@test
def nccl_async_error_handling_is_set_under_both_names_unless_inherited():
    dumps = dump_env(*GPUS)
    for env in dumps.values():
        check(env["NCCL_ASYNC_ERROR_HANDLING"] == "1" and
              env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1", "both names set")
    dumps = dump_env(*GPUS, env=base_env(NCCL_ASYNC_ERROR_HANDLING="0"))
    for env in dumps.values():
        check(env["NCCL_ASYNC_ERROR_HANDLING"] == "0", "inherited value kept")


def record_failure(env_extra, *flags):
    """Runs tests/torch/record_failure.py (rank 1 raises under torch's @record)."""
    env = base_env(**env_extra)
    return run_muster(list(flags) + ["--nproc-per-node", "2",
                                     os.path.join(TORCH_SCRIPTS, "record_failure.py")], env=env,
                      timeout=120)


@test
def failed_job_writes_the_root_cause_to_torchelastic_error_file():
    out = tempdir()
    root = os.path.join(out, "root.json")
    logs = os.path.join(out, "logs")
    code, _, stderr = record_failure({"TORCHELASTIC_ERROR_FILE": root}, "--log-dir", logs)
    check(code == 1, f"exit {code}", stderr)
    with open(root) as f:
        data = json.load(f)
    message = data["message"]
    check(message["message"] == "ValueError: record_failure: rank 1 gives up on purpose",
          "message.message", json.dumps(data))
    check("py_callstack" in message["extraInfo"] and "timestamp" in message["extraInfo"],
          "message.extraInfo", json.dumps(data))
    check(message["errorCode"] == 1, "message.errorCode", json.dumps(data))
    # The worker's own file is copied, never rewritten.
    with open(os.path.join(run_log_dir(logs), "attempt_0", "1", "error.json")) as f:
        check("errorCode" not in json.load(f)["message"], "worker file changed")


@test
def no_worker_error_file_means_no_root_cause_file_as_torchrun():
    out = tempdir()
    root = os.path.join(out, "root.json")
    code, _, stderr = run_muster(["--nproc-per-node", "2", worker("behave.py"), "exit-on-rank",
                                  "1", "7"], env=base_env(TORCHELASTIC_ERROR_FILE=root))
    check(code == 7, f"exit {code}", stderr)
    check(not os.path.exists(root), "root cause file written")
    check("left no error file" in stderr, "says why", stderr)


@test
def duplicate_filters_copy_matching_tee_lines_of_all_ranks_to_one_file():
    logs = tempdir()
    code, _, stderr = run_muster(["--nproc-per-node", "2", "--tee", "3", "--log-dir", logs,
                                  "--duplicate-stdout-filters", "out 0 1,out 1 2",
                                  "--duplicate_stderr_filters", "err 1",
                                  worker("behave.py"), "print", "3"])
    check(code == 0, f"exit {code}", stderr)
    attempt = os.path.join(run_log_dir(logs), "attempt_0")
    with open(os.path.join(attempt, "filtered_stdout.log")) as f:
        out_lines = sorted(f.read().splitlines())
    with open(os.path.join(attempt, "filtered_stderr.log")) as f:
        err_lines = sorted(f.read().splitlines())
    check(out_lines == ["[rank0]: out 0 1", "[rank1]: out 1 2"], f"stdout copy {out_lines}")
    check(err_lines == ["[rank1]: err 1 0", "[rank1]: err 1 1", "[rank1]: err 1 2"],
          f"stderr copy {err_lines}")


@test
def logs_specs_is_accepted_with_no_effect():
    code, stdout, stderr = run_muster(["--logs-specs", "my_plugin", "--dry-run", "train.py"])
    check(code == 0, f"exit {code}", stderr)
    check("--logs-specs my_plugin: no effect" in stderr, "info line", stderr)
    code, _, stderr = run_muster(["--logs_specs=my_plugin", worker("behave.py"), "print", "1"])
    check(code == 0, f"exit {code}", stderr)


def launch(*flags, expect):
    """`muster launch` on two workers of local_rank_args.py; returns (code, dumps, stderr)."""
    out = tempdir()
    code, _, stderr = run_muster(["launch", "--nproc-per-node", "2"] + list(flags) +
                                 [worker("local_rank_args.py"), "--out", out, "--expect", expect])
    return code, read_dumps_by_rank(out), stderr


def read_dumps_by_rank(directory):
    dumps = {}
    for name in os.listdir(directory):
        with open(os.path.join(directory, name)) as f:
            dumps[name] = json.load(f)
    return dumps


@test
def launch_passes_the_required_local_rank_argument():
    code, dumps, stderr = launch(expect="local_rank")
    check(code == 0, f"exit {code}", stderr)
    check(sorted(d["arg"] for d in dumps.values()) == [0, 1], str(dumps))
    for d in dumps.values():
        check(d["argv"][1] == f"--local_rank={d['LOCAL_RANK']}", f"right after SCRIPT: {d['argv']}")


@test
def launch_spells_local_rank_with_a_dash_when_asked():
    code, dumps, stderr = launch("--local-rank-arg", "local-rank", expect="local-rank")
    check(code == 0, f"exit {code}", stderr)
    check(sorted(d["arg"] for d in dumps.values()) == [0, 1], str(dumps))


@test
def launch_use_env_passes_no_argument():
    for flag in ("--use-env", "--use_env"):
        code, dumps, stderr = launch(flag, expect="none")
        check(code == 0, f"{flag}: exit {code}", stderr)
        check(sorted(d["LOCAL_RANK"] for d in dumps.values()) == ["0", "1"], str(dumps))


@test
def plain_muster_does_not_satisfy_a_required_local_rank():
    out = tempdir()
    code, _, stderr = run_muster(["--nproc-per-node", "1", worker("local_rank_args.py"),
                                  "--out", out, "--expect", "local_rank"])
    check(code == 2, f"exit {code} (argparse's usage error expected)", stderr)


@test
def launch_dry_run_shows_each_workers_argument_and_local_rank():
    code, stdout, stderr = run_muster(["launch", "--dry-run", "--nproc-per-node", "2",
                                       "--virtual-local-rank", "train.py", "--lr", "1"])
    check(code == 0, f"exit {code}", stderr)
    check("LOCAL_RANK=0  " in stdout and "train.py --local_rank=1 --lr 1" in stdout, stdout)
    check("CUDA_VISIBLE_DEVICES=1 LOCAL_RANK=0" in stdout, stdout)


if __name__ == "__main__":
    run_tests()

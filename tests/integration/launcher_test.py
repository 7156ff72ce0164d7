"""Integration tests of the muster launcher with real worker processes."""
import os
import signal
import time

from harness import (MUSTER, check, free_port, kill_pids, pid_alive, read_dumps, run_log_dir,
                     run_muster, run_tests, start, tempdir, test, wait_for, worker, base_env)

TORCHRUN_VARS = [
    "RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE",
    "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE",
]


def behave(*args):
    return [worker("behave.py")] + [str(a) for a in args]


@test
def env_dump_gives_torchrun_variables_and_the_gpu_list():
    out = tempdir()
    code, stdout, stderr = run_muster(["--gpus", "4,5,6", "--nproc-per-node", "gpu",
                                       worker("env_dump.py"), out])
    check(code == 0, f"exit {code}", stderr)
    dumps = read_dumps(out)
    check(sorted(dumps) == [0, 1, 2], f"ranks {sorted(dumps)}")
    for rank, env in dumps.items():
        for var in TORCHRUN_VARS:
            check(var in env, f"rank {rank} lacks {var}")
        # Every worker sees the list; LOCAL_RANK picks its own GPU from it.
        check(env["CUDA_VISIBLE_DEVICES"] == "4,5,6", f"rank {rank} CVD {env['CUDA_VISIBLE_DEVICES']}")
        check(env["LOCAL_RANK"] == str(rank) and env["WORLD_SIZE"] == "3", f"rank {rank}: {env}")
        check(env["LOCAL_WORLD_SIZE"] == "3" and env["GROUP_RANK"] == "0", "group vars")
        check(env["TORCHELASTIC_USE_AGENT_STORE"] == "True", "agent store")
        check(env["OMP_NUM_THREADS"] == "1", "OMP_NUM_THREADS")
        check(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1", "NCCL async error handling")
        check(env["NCCL_ASYNC_ERROR_HANDLING"] == "1", "NCCL async error handling, old name")
        check(env["MASTER_ADDR"] == "127.0.0.1" and int(env["MASTER_PORT"]) > 0, "master")
    check(len({env["MASTER_PORT"] for env in dumps.values()}) == 1, "one master port")


@test
def env_dump_all_visibility_gives_every_worker_the_list():
    out = tempdir()
    code, _, stderr = run_muster(["--gpus", "4,5,6", "--nproc_per_node=gpu",
                                  "--gpu-visibility", "all", worker("env_dump.py"), out])
    check(code == 0, f"exit {code}", stderr)
    dumps = read_dumps(out)
    check(len(dumps) == 3, f"{len(dumps)} dumps")
    for env in dumps.values():
        check(env["CUDA_VISIBLE_DEVICES"] == "4,5,6", env["CUDA_VISIBLE_DEVICES"])


@test
def no_gpu_ids_leaves_inherited_visibility_alone():
    out = tempdir()
    env = base_env(OMP_NUM_THREADS="7")
    code, _, stderr = run_muster(["--nproc-per-node", "2", worker("env_dump.py"), out], env=env)
    check(code == 0, f"exit {code}", stderr)
    for env_seen in read_dumps(out).values():
        check("CUDA_VISIBLE_DEVICES" not in env_seen, "CUDA_VISIBLE_DEVICES was set")
        check(env_seen["OMP_NUM_THREADS"] == "7", "inherited OMP_NUM_THREADS replaced")


@test
def worker_exit_code_is_muster_exit_code_with_report():
    code, _, stderr = run_muster(["--nproc-per-node", "3", "--shutdown-timeout", "5"] +
                                 behave("exit-on-rank", 1, 7))
    check(code == 7, f"exit {code}", stderr)
    root = stderr.split("root cause")[1]
    check("rank       : 1 (local_rank 1)" in root, "root cause rank", stderr)
    check("exit code 7" in root, "root cause code", stderr)
    check("pid        :" in root and "host       :" in root and "time       :" in root, "fields", stderr)


@test
def segfaulting_worker_gives_128_plus_signal():
    code, _, stderr = run_muster(["--nproc-per-node", "2"] + behave("segv-on-rank", 0))
    check(code == 128 + signal.SIGSEGV, f"exit {code}", stderr)
    check("signal 11 (SIGSEGV)" in stderr, "signal name", stderr)


@test
def error_file_message_appears_in_report():
    code, _, stderr = run_muster(["--nproc-per-node", "2"] + behave("error-file", 1))
    check(code == 1, f"exit {code}", stderr)
    check("ValueError: bad batch size 0" in stderr, "error file message", stderr)


@test
def sigterm_is_forwarded_and_muster_exits_143():
    proc = start([MUSTER, "--nproc-per-node", "2"] + behave("sleep", 60))
    time.sleep(1.0)  # let the workers install their handlers
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    elapsed = time.monotonic() - sent
    check(proc.returncode == 128 + signal.SIGTERM, f"exit {proc.returncode}", err)
    check("TERM 0" in out and "TERM 1" in out, "workers got SIGTERM", out, err)
    check(elapsed < 2.0, f"took {elapsed:.2f}s")


@test
def signals_to_handle_chooses_what_is_forwarded():
    proc = start([MUSTER, "--nproc-per-node", "1", "--signals-to-handle", "SIGUSR1,SIGTERM"] +
                 behave("sleep", 60))
    time.sleep(1.0)
    proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=10)
    # The worker does not handle SIGUSR1, so the forwarded signal kills it.
    check(proc.returncode == 128 + signal.SIGUSR1, f"exit {proc.returncode}", out, err)


@test
def worker_ignoring_sigterm_is_killed_after_shutdown_timeout():
    proc = start([MUSTER, "--nproc-per-node", "1", "--shutdown-timeout", "1"] + behave("ignore-term", 60))
    time.sleep(1.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    elapsed = time.monotonic() - sent
    check(proc.returncode == 128 + signal.SIGTERM, f"exit {proc.returncode}", err)
    check(0.9 <= elapsed < 3.0, f"took {elapsed:.2f}s, want about the 1 s shutdown timeout")


@test
def sigkilled_muster_leaves_no_orphan():
    pid_dir = tempdir()
    proc = start([MUSTER, "--nproc-per-node", "3"] + behave("sleep", 60, "--pid-dir", pid_dir))
    def pid_files():
        return [f for f in os.listdir(pid_dir) if f.endswith(".pid")]
    check(wait_for(lambda: len(pid_files()) == 3, 10), "workers did not start")
    pids = [int(open(os.path.join(pid_dir, f)).read()) for f in pid_files()]
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        gone = wait_for(lambda: not any(pid_alive(p) for p in pids), 3)
        check(gone, f"orphans left: {[p for p in pids if pid_alive(p)]}")
    finally:
        kill_pids(pids)


@test
def failed_workers_are_restarted_with_incremented_restart_count():
    code, out, err = run_muster(["--nproc-per-node", "2", "--max-restarts", "2"] +
                                behave("fail-until", 2, 3))
    check(code == 0, f"exit {code}", err)
    # A failing attempt may stop its peer before it prints; every attempt must
    # still have run, and the last one on both ranks.
    for attempt in range(3):
        check(f"ATTEMPT {attempt} RANK" in out, f"attempt {attempt} missing", out)
    check("ATTEMPT 2 RANK 0" in out and "ATTEMPT 2 RANK 1" in out, "last attempt on both ranks", out)
    check(err.count("restarting all local workers") == 2, "two restart reports", err)


@test
def restarts_run_out_and_the_last_failure_decides_the_exit_code():
    code, out, err = run_muster(["--nproc-per-node", "1", "--max-restarts", "1"] +
                                behave("fail-until", 5, 4))
    check(code == 4, f"exit {code}", err)
    check("ATTEMPT 1 RANK 0" in out and "ATTEMPT 2" not in out, "attempts", out)
    check("no restarts left" in err, "final report", err)


@test
def output_lines_are_prefixed_by_global_rank():
    code, out, err = run_muster(["--nproc-per-node", "2"] + behave("print", 50))
    check(code == 0, f"exit {code}", err)
    for rank in (0, 1):
        lines = [line for line in out.splitlines() if line.startswith(f"[rank{rank}]: out {rank} ")]
        check(len(lines) == 50, f"rank {rank}: {len(lines)} stdout lines", out)
        check(sum(1 for line in err.splitlines() if line.startswith(f"[rank{rank}]: err {rank} ")) == 50,
              "stderr lines", err)
    # Never interleaved within a line: every worker line is exactly prefix + text.
    for line in out.splitlines():
        check(line.startswith("[rank") and line.count("out ") == 1, f"mixed line {line!r}")


@test
def no_prefix_flag_turns_prefix_off():
    code, out, err = run_muster(["--nproc-per-node", "1", "--no-prefix"] + behave("print", 2))
    check(code == 0, f"exit {code}", err)
    check(out.splitlines() == ["out 0 0", "out 0 1"], "unprefixed output", out)


@test
def local_ranks_filter_limits_the_console():
    code, out, err = run_muster(["--nproc-per-node", "3", "--local-ranks-filter", "1"] + behave("print", 3))
    check(code == 0, f"exit {code}", err)
    check("[rank1]: out 1 0" in out, "rank 1 shown", out)
    check("[rank0]" not in out and "[rank2]" not in out, "other ranks filtered", out)


@test
def log_dir_keeps_per_rank_files_per_attempt():
    logs = tempdir()
    code, out, err = run_muster(["--nproc-per-node", "2", "--max-restarts", "1", "--log-dir", logs,
                                 "--rdzv-id", "job1"] + behave("fail-until", 1, 2))
    check(code == 0, f"exit {code}", err)
    for attempt in (0, 1):
        for rank in (0, 1):
            path = os.path.join(run_log_dir(logs, "job1"), f"attempt_{attempt}", str(rank),
                                "stdout.log")
            check(os.path.exists(path), f"missing {path}")
            check(f"ATTEMPT {attempt} RANK {rank}" in open(path).read(), f"content of {path}")
    check("ATTEMPT 0 RANK 0" in out, "console still shows output without redirects", out)


@test
def redirects_send_output_only_to_files_and_tee_to_both():
    logs = tempdir()
    code, out, err = run_muster(["--nproc-per-node", "2", "--log-dir", logs, "--rdzv-id", "r",
                                 "--redirects", "1", "--tee", "0:2"] + behave("print", 2))
    check(code == 0, f"exit {code}", err)
    check("out 0 0" not in out and "out 1 0" not in out, "stdout was redirected", out)
    check("[rank0]: err 0 0" in err, "rank 0 stderr tee'd to console", err)
    check("[rank1]: err 1 0" in err, "rank 1 stderr not redirected", err)
    base = os.path.join(run_log_dir(logs, "r"), "attempt_0")
    check("out 1 1" in open(os.path.join(base, "1", "stdout.log")).read(), "redirected file")
    check("err 0 1" in open(os.path.join(base, "0", "stderr.log")).read(), "tee file")


@test
def static_two_nodes_on_loopback_get_contiguous_ranks():
    out = tempdir()
    port = free_port()
    common = ["--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
              "--master-port", str(port), worker("env_dump.py"), out]
    node0 = start([MUSTER, "--node-rank", "0"] + common)
    node1 = start([MUSTER, "--node_rank=1"] + common)
    _, err0 = node0.communicate(timeout=30)
    _, err1 = node1.communicate(timeout=30)
    check(node0.returncode == 0 and node1.returncode == 0,
          f"exits {node0.returncode} {node1.returncode}", err0, err1)
    dumps = read_dumps(out)
    check(sorted(dumps) == [0, 1, 2, 3], f"ranks {sorted(dumps)}")
    for rank, env in dumps.items():
        check(env["GROUP_RANK"] == str(rank // 2) and env["LOCAL_RANK"] == str(rank % 2), f"rank {rank}")
        check(env["WORLD_SIZE"] == "4" and env["GROUP_WORLD_SIZE"] == "2", "sizes")
        check(env["MASTER_PORT"] == str(port), "master port")


@test
def bad_flags_exit_2_with_one_clear_line():
    for args, needle in [
        (["--nproc-per-node", "0", "x.py"], "'0'"),
        (["--nnodes", "3:2", "x.py"], "'3:2'"),
        (["--nprocs-per-node", "2", "x.py"], "did you mean '--nproc-per-node'"),
    ]:
        code, out, err = run_muster(args)
        check(code == 2, f"{args}: exit {code}", err)
        check(needle in err and len(err.strip().splitlines()) == 1, f"{args}: {err!r}")


@test
def workers_inherit_no_file_descriptor_beyond_stdio():
    # The agent's store listener and connections must not leak into workers.
    code, out, err = run_muster(["--nproc-per-node", "2", "--no-python", "/bin/sh", "-c",
                                 "ls /proc/self/fd | tr '\\n' ' '; echo"])
    check(code == 0, f"exit {code}", err)
    lines = out.splitlines()
    check(len(lines) == 2, f"one line per worker: {out!r}")
    for line in lines:
        fds = sorted(int(x) for x in line.split(":", 1)[1].split())
        # 0, 1, 2, the progress pipe (3), the control pipe (4) and the
        # descriptor ls uses to read the directory.
        check(len(fds) == 6 and fds[:5] == [0, 1, 2, 3, 4], f"inherited fds: {line}")


@test
def workers_lead_their_own_session_with_every_signal_unblocked_and_sigpipe_default():
    # What ForkExec promises (launcher/process/exec_child.h). The agent ignores
    # SIGPIPE and blocks signals around the clone: neither may reach a worker.
    script = ('read -r pid comm state ppid pgrp session rest < /proc/self/stat; '
              'while read -r key value; do case $key in SigBlk:|SigIgn:) sig="$sig $value";; esac; '
              'done < /proc/self/status; echo "$$ $pgrp $session$sig"')
    code, out, err = run_muster(["--nproc-per-node", "2", "--no-python", "/bin/sh", "-c", script])
    check(code == 0, f"exit {code}", err)
    lines = out.splitlines()
    check(len(lines) == 2, f"one line per worker: {out!r}")
    for line in lines:
        pid, pgrp, session, blocked, ignored = line.split(":", 1)[1].split()
        check(pid == pgrp == session, f"not a session leader: {line}")
        check(int(blocked, 16) == 0, f"signals blocked: {line}")
        check(not int(ignored, 16) & (1 << (signal.SIGPIPE - 1)), f"SIGPIPE ignored: {line}")


@test
def a_worker_that_cannot_be_executed_is_an_error_naming_it_and_the_reason():
    # Passes the start-up check (it exists and is executable), fails in execve.
    bad = os.path.join(tempdir(), "not-a-program")
    with open(bad, "wb") as f:
        f.write(b"\x7fELF\x01 not a program")
    os.chmod(bad, 0o755)
    code, _, err = run_muster(["--nproc-per-node", "2", "--no-python", bad], timeout=20)
    check(code != 0, f"exit {code}", err)
    line = next((x for x in err.splitlines() if f"cannot start '{bad}'" in x), "")
    check("Exec format error" in line, "no clear exec error", err)


@test
def a_worker_that_stops_reporting_progress_is_killed_as_hung_and_the_job_restarts():
    started = time.monotonic()
    code, out, err = run_muster(["--nproc-per-node", "2", "--hang-timeout", "1",
                                 "--max-restarts", "1", "--shutdown-timeout", "1"]
                                + behave("hang-on-rank", 1, 5), timeout=60)
    elapsed = time.monotonic() - started
    check(code == 0, f"exit {code}", err)
    check("ATTEMPT 1 RANK 0" in out and "ATTEMPT 1 RANK 1" in out, "no second attempt", out)
    check("hung       : no progress for" in err and "last step 5" in err,
          "the report does not say rank 1 hung after step 5", err)
    check("rank       : 1 (local_rank 1)" in err, "the hung worker is not rank 1", err)
    # 0.5 s of progress, 1 s of silence, the stop, and the restart.
    check(elapsed < 8, f"took {elapsed:.1f}s")


@test
def a_worker_that_never_reports_progress_is_never_called_hung():
    code, out, err = run_muster(["--hang-timeout", "0.5", "--nproc-per-node", "1", "--no-python",
                                 "/bin/sh", "-c", "sleep 1.5; echo done"])
    check(code == 0 and "done" in out, "a worker that never reported progress was killed",
          out, err)


@test
def a_stale_error_file_from_an_earlier_run_is_not_reported():
    logs = tempdir()
    # An earlier run's directory, laid out as muster lays out its own.
    stale = os.path.join(logs, "none_abc123", "attempt_0", "0")
    os.makedirs(stale)
    with open(os.path.join(stale, "error.json"), "w") as f:
        f.write('{"message": "OLD RUN: CUDA OOM"}')
    code, _, err = run_muster(["--log-dir", logs, "--no-python", "/bin/sh", "-c", "exit 2"])
    check(code == 2, f"exit {code}", err)
    check("OLD RUN" not in err, "stale error file reported", err)


@test
def an_unusable_log_dir_fails_fast_naming_it():
    # Each run makes a directory of its own under --log-dir, so the one thing
    # that can stand in its way is --log-dir itself.
    blocker = os.path.join(tempdir(), "not-a-directory")
    with open(blocker, "w") as f:
        f.write("x")
    code, _, err = run_muster(["--nproc-per-node", "2", "--log-dir", blocker, "--rdzv-id", "r",
                               "--no-python", "/bin/true"], timeout=10)
    check(code == 1 and blocker in err, f"exit {code}", err)


@test
def missing_executable_is_named():
    code, _, err = run_muster(["--no-python", "/nonexistent/worker"])
    check(code == 2, f"exit {code}", err)
    check("/nonexistent/worker" in err, err)


if __name__ == "__main__":
    run_tests()

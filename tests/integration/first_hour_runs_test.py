"""What a torchrun user meets in the first hour, with real processes: logs
that are never written over, error files that the report names and that
still exist, commands that cannot work refused before anything starts, the
hint when the workers' Python has no torch, and a failure reported once."""
import os
import shutil
import stat
import subprocess
import time

from harness import (MUSTER, PYTHON, base_env, check, free_port, read_dumps, run_log_dir,
                     run_log_dirs, run_muster, run_tests, start, tempdir, test, worker, Skip)


def behave(*args):
    return [worker("behave.py")] + [str(a) for a in args]


def snapshot(directory):
    """Every file under `directory`, as path -> bytes."""
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[path] = f.read()
    return files


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def marking_interpreter(directory):
    """A Python that leaves a marker file whenever muster runs it as a worker
    (its `-c` module lookup leaves none), then runs the real one."""
    marker = os.path.join(directory, "worker-started")
    fake = executable(os.path.join(directory, "python"), f"""#!/bin/sh
[ "$1" = "-c" ] || touch {marker}
exec {PYTHON} "$@"
""")
    return fake, marker


def check_refused(args, bad_value, marker=None, env=None, cwd=None):
    """muster refuses `args` with one line naming `bad_value`, exit 2, and
    starts no worker."""
    began = time.monotonic()
    proc = start([MUSTER] + args, env=env or base_env(), cwd=cwd)
    out, err = proc.communicate(timeout=30)
    lines = err.strip().splitlines()
    check(proc.returncode == 2, f"exit {proc.returncode} for {args}", err)
    check(len(lines) == 1 and lines[0].startswith("muster: error: ") and bad_value in lines[0],
          f"not one line naming {bad_value!r}", err)
    check(out == "", "stdout", out)
    check("started" not in err, "workers started", err)
    if marker is not None:
        check(not os.path.exists(marker), "a worker was spawned", err)
    # Refusing takes no worker's start-up: far under any Python's import time.
    check(time.monotonic() - began < 10, f"took {time.monotonic() - began:.1f} s")
    return lines[0]


@test
def two_runs_into_one_log_dir_leave_the_first_runs_files_byte_identical():
    logs = tempdir()
    # The first run fails in each of its three attempts: attempt_0..attempt_2.
    code, _, err = run_muster(["--nproc-per-node", "2", "--max-restarts", "2", "--log-dir", logs]
                              + behave("fail-until", 9, 3))
    check(code == 3, f"first run exit {code}", err)
    first = run_log_dir(logs)
    check(f"worker logs in {first}" in err, "the log directory is named at info", err)
    before = snapshot(first)
    check(any(p.endswith(os.path.join("attempt_2", "1", "stdout.log")) for p in before),
          f"first run's files {sorted(before)}")
    # The second (same run id "none") succeeds in one attempt.
    code, _, err = run_muster(["--nproc-per-node", "2", "--log-dir", logs]
                              + behave("fail-until", 0, 3))
    check(code == 0, f"second run exit {code}", err)
    check(snapshot(first) == before, "the second run changed the first run's files")
    dirs = run_log_dirs(logs)
    check(len(dirs) == 2 and dirs[0] == first, f"run directories {dirs}")
    second = snapshot(dirs[1])
    check(sorted(os.path.relpath(p, dirs[1]) for p in second) ==
          [os.path.join("attempt_0", str(r), s) for r in (0, 1) for s in ("stderr.log", "stdout.log")],
          f"second run's files {sorted(second)}")
    check(b"ATTEMPT 0 RANK 1" in second[os.path.join(dirs[1], "attempt_0", "1", "stdout.log")],
          "second run's output")


@test
def elastic_agents_on_one_host_sharing_a_log_dir_keep_their_own_files():
    logs, out = tempdir(), tempdir()
    args = [MUSTER, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "--rdzv-id", "shared",
            "--log-dir", logs, worker("env_dump.py"), out]
    agents = [start(args) for _ in range(2)]
    results = [a.communicate(timeout=60) for a in agents]
    errs = [err for _, err in results]
    check([a.returncode for a in agents] == [0, 0], "exits", *errs)
    check(sorted(read_dumps(out)) == [0, 1, 2, 3], f"ranks {sorted(read_dumps(out))}", *errs)
    dirs = run_log_dirs(logs, "shared")
    check(len(dirs) == 2, f"run directories {dirs}", *errs)
    for run_dir in dirs:
        # Each agent's own local ranks 0 and 1, in the one generation.
        check(os.listdir(run_dir) == ["attempt_0"], f"{run_dir}: {os.listdir(run_dir)}")
        for local_rank in ("0", "1"):
            rank_dir = os.path.join(run_dir, "attempt_0", local_rank)
            for stream in ("stdout.log", "stderr.log"):
                check(os.path.isfile(os.path.join(rank_dir, stream)), f"no {stream} in {rank_dir}")


@test
def the_error_file_named_in_a_report_exists_after_muster_exits():
    logs = tempdir()
    code, _, err = run_muster(["--nproc-per-node", "2", "--log-dir", logs] + behave("error-file", 1))
    check(code == 1, f"exit {code}", err)
    named = [line.split(":", 1)[1].strip() for line in err.splitlines()
             if line.strip().startswith("error file :")]
    check(len(named) == 1, "the report names one error file", err)
    check(os.path.isfile(named[0]) and named[0].startswith(run_log_dir(logs)),
          f"{named[0]} is gone", err)
    check("message    : ValueError: bad batch size 0" in err, "the message is quoted", err)
    logs_lines = [line.split(":", 1)[1].strip() for line in err.splitlines()
                  if line.strip().startswith("logs       :")]
    check(logs_lines and all(os.path.isdir(p) for p in logs_lines), "log directory named", err)


@test
def without_log_dir_the_report_quotes_the_error_file_and_names_no_deleted_path():
    code, _, err = run_muster(["--nproc-per-node", "2"] + behave("error-file", 1))
    check(code == 1, f"exit {code}", err)
    check("message    : ValueError: bad batch size 0" in err, "the message is quoted", err)
    check("error file :" not in err and "logs       :" not in err, "a path was named", err)
    for word in err.split():
        if word.startswith("/") and "muster-" in word:
            check(os.path.exists(word), f"the report names {word}, which is gone", err)


@test
def a_missing_script_or_a_directory_is_refused_before_any_worker_starts():
    work = tempdir()
    fake, marker = marking_interpreter(work)
    check_refused(["--nproc-per-node", "2", "--python", fake, "nosuch.py"], "'nosuch.py'",
                  marker, cwd=work)
    os.makedirs(os.path.join(work, "src"))
    line = check_refused(["--nproc-per-node", "2", "--python", fake, "src"], "'src'", marker,
                         cwd=work)
    check("directory" in line, line)
    # Relative to the working directory, as torchrun: the same name from
    # where it exists runs.
    executable(os.path.join(work, "ok.py"), "print('ran')\n")
    proc = start([MUSTER, "--python", fake, "ok.py"], cwd=work)
    stdout, err = proc.communicate(timeout=30)
    check(proc.returncode == 0 and "ran" in stdout, f"exit {proc.returncode}", err)
    check(os.path.exists(marker), "the fake interpreter left no marker when it ran")
    # A directory Python can run (its __main__.py) is not refused.
    os.remove(marker)
    executable(os.path.join(work, "src", "__main__.py"), "print('main ran')\n")
    proc = start([MUSTER, "--python", fake, "src"], cwd=work)
    stdout, err = proc.communicate(timeout=30)
    check(proc.returncode == 0 and "main ran" in stdout, f"exit {proc.returncode}", err)


@test
def a_module_the_interpreter_cannot_find_is_refused_before_any_worker_starts():
    work = tempdir()
    fake, marker = marking_interpreter(work)
    line = check_refused(["--nproc-per-node", "2", "--python", fake, "-m", "nosuchmod.train"],
                         "'nosuchmod'", marker, cwd=work)
    check(fake in line and "--python" in line, "names the interpreter and how to choose", line)
    # A module in the working directory is found, as `python -m` finds it.
    executable(os.path.join(work, "localmod.py"), "print('module ran')\n")
    proc = start([MUSTER, "--python", fake, "-m", "localmod"], cwd=work)
    stdout, err = proc.communicate(timeout=30)
    check(proc.returncode == 0 and "module ran" in stdout, f"exit {proc.returncode}", err)


@test
def a_missing_interpreter_or_program_is_refused_before_any_worker_starts():
    work = tempdir()
    script = executable(os.path.join(work, "t.py"), "print('ran')\n")
    check_refused(["--python", "/nonexistent/python3", script], "'/nonexistent/python3'")
    env = base_env(MUSTER_PYTHON="/nonexistent/envpython")
    line = check_refused([script], "'/nonexistent/envpython'", env=env)
    check(line.startswith("muster: error: MUSTER_PYTHON:"), "names the variable", line)
    check_refused(["--no-python", "no-such-program-here", "x"], "'no-such-program-here'")
    # A directory on PATH named like the program is not a program.
    bindir = os.path.join(work, "bin")
    os.makedirs(os.path.join(bindir, "notaprogram"))
    env = base_env(PATH=bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
    check_refused(["--no-python", "notaprogram"], "'notaprogram'", env=env)


def no_torch_hint_lines(err):
    return [line for line in err.splitlines() if "has no torch" in line]


@test
def a_worker_whose_python_has_no_torch_gets_the_interpreter_hint():
    work = tempdir()
    fake = executable(os.path.join(work, "python-without-torch"), """#!/bin/sh
[ "$1" = "-c" ] && exit 0
echo "Traceback (most recent call last):" >&2
echo "ModuleNotFoundError: No module named 'torch'" >&2
exit 1
""")
    script = executable(os.path.join(work, "train.py"), "import torch\n")
    code, _, err = run_muster(["--nproc-per-node", "2", "--python", fake, script])
    check(code == 1, f"exit {code}", err)
    hints = no_torch_hint_lines(err)
    check(len(hints) == 1, f"{len(hints)} hints", err)
    check(fake in hints[0] and "--python" in hints[0] and "MUSTER_PYTHON" in hints[0],
          "the hint names the interpreter and how to choose another", hints[0])
    # Any other failure gets no such hint.
    code, _, err = run_muster(["--nproc-per-node", "2"] + behave("exit-on-rank", 1, 3))
    check(code == 3 and not no_torch_hint_lines(err), f"exit {code}", err)


@test
def the_first_python3_on_path_without_torch_gets_the_hint():
    python3 = shutil.which("python3")
    if python3 is None:
        raise Skip("no python3 on PATH")
    probe = subprocess.run([python3, "-c", "import importlib.util, sys; "
                            "sys.exit(importlib.util.find_spec('torch') is not None)"])
    if probe.returncode != 0:
        raise Skip(f"{python3} (first python3 on PATH) has torch")
    work = tempdir()
    script = executable(os.path.join(work, "train.py"), "import torch\n")
    env = base_env()
    del env["MUSTER_PYTHON"]  # the default: python3 from PATH
    code, _, err = run_muster(["--nproc-per-node", "2", script], env=env, timeout=60)
    check(code == 1, f"exit {code}", err)
    hints = no_torch_hint_lines(err)
    check(len(hints) == 1 and f"python3 ({python3})" in hints[0], "hint", err)


def failure_statements(err):
    """Lines of muster's own that state a failure."""
    return [line for line in err.splitlines()
            if line.startswith("muster: worker failure") or line.startswith("muster: warning")
            or line.startswith("muster: error")]


@test
def a_failure_is_reported_once_and_completely():
    for mode in ([], ["--standalone"]):
        for level in ("", "info"):
            env = base_env()
            env.pop("MUSTER_LOG_LEVEL", None)
            if level:
                env["MUSTER_LOG_LEVEL"] = level
            code, _, err = run_muster(mode + ["--nproc-per-node", "2"]
                                      + behave("exit-on-rank", 1, 3), env=env)
            check(code == 3, f"{mode} exit {code}", err)
            statements = failure_statements(err)
            check(len(statements) == 1, f"{mode} level={level or 'default'}: "
                  f"{len(statements)} statements of the failure", err)
            check(statements[0] == "muster: worker failure in attempt 0 (0 of 0 restarts used); "
                  "no restarts left", statements[0], err)
            for field in ("rank       : 1 (local_rank 1)", "host       : ",
                          "exit       : exit code 3"):
                check(field in err, f"{mode}: the report lacks {field!r}", err)


@test
def a_failure_with_restarts_left_says_how_many_were_used():
    code, _, err = run_muster(["--standalone", "--nproc-per-node", "2", "--max-restarts", "1"]
                              + behave("fail-until", 9, 4))
    check(code == 4, f"exit {code}", err)
    statements = failure_statements(err)
    check(statements == ["muster: worker failure in attempt 0 (0 of 1 restarts used); "
                         "restarting all local workers",
                         "muster: worker failure in attempt 1 (1 of 1 restarts used); "
                         "no restarts left"], f"statements {statements}", err)


if __name__ == "__main__":
    run_tests()

"""Workers import the muster Python package from any build, without the user
setting PYTHONPATH, and see the variables torchrun 2.x sets in its own
environment (launcher/plan/python_package.h, worker_env.h's AgentVariables):

- build/bin/muster in a source tree: `import muster` in a worker loads the
  tree's python/muster; a user's PYTHONPATH stays first;
- a `cmake --install` under another prefix: the installed muster finds the
  package it installed (<prefix>/lib/python3/dist-packages) with the build
  tree gone from the path;
- TORCHELASTIC_SIGNALS_TO_HANDLE is the --signals-to-handle list;
- `python -m muster ARGS` runs muster ARGS (python/muster/__main__.py), its
  workers on that interpreter.
"""
import os
import shutil
import subprocess

from harness import (BIN_DIR, MUSTER, PYTHON, SOURCE_DIR, base_env, check, run, run_tests, tempdir,
                     test, write_file)

WORKER = ("import os, muster\n"
          "print('PACKAGE', os.path.dirname(os.path.dirname(os.path.abspath(muster.__file__))))\n"
          "print('PYTHONPATH', os.environ.get('PYTHONPATH'))\n"
          "print('SIGNALS', os.environ.get('TORCHELASTIC_SIGNALS_TO_HANDLE'))\n"
          "import sys\nprint('PYTHON', sys.executable)\n")


def said(out, key):
    for line in out.splitlines():
        if line.startswith(key + " "):
            return line.split(" ", 1)[1]
    return None


def env_without_pythonpath(**extra):
    env = base_env(**extra)
    env.pop("PYTHONPATH", None)
    return env


@test
def a_source_builds_workers_import_the_trees_package_without_pythonpath():
    script = write_file(tempdir(), "worker.py", WORKER)
    code, out, err = run([MUSTER, "--nproc-per-node", "1", "--no-prefix", script],
                         env=env_without_pythonpath(), timeout=60)
    check(code == 0, f"the worker failed (exit {code})", out, err)
    check(said(out, "PACKAGE") == os.path.join(SOURCE_DIR, "python"),
          f"muster was imported from {said(out, 'PACKAGE')}", out)
    check(said(out, "SIGNALS") == "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
          f"TORCHELASTIC_SIGNALS_TO_HANDLE={said(out, 'SIGNALS')}", out)


@test
def a_users_pythonpath_comes_first():
    work = tempdir()
    script = write_file(work, "worker.py", WORKER)
    code, out, err = run([MUSTER, "--nproc-per-node", "1", "--no-prefix",
                          "--signals-to-handle", "SIGTERM,SIGUSR1", script],
                         env=base_env(PYTHONPATH=work), timeout=60)
    check(code == 0, f"the worker failed (exit {code})", out, err)
    check(said(out, "PYTHONPATH") == f"{work}:{os.path.join(SOURCE_DIR, 'python')}",
          f"PYTHONPATH={said(out, 'PYTHONPATH')}", out)
    check(said(out, "SIGNALS") == "SIGTERM,SIGUSR1", f"signals {said(out, 'SIGNALS')}", out)


@test
def an_installed_muster_finds_the_package_it_installed():
    prefix = tempdir()
    build_dir = os.path.dirname(BIN_DIR)
    done = subprocess.run(["cmake", "--install", build_dir, "--prefix", prefix],
                          capture_output=True, text=True, timeout=120)
    check(done.returncode == 0, "cmake --install failed", done.stdout, done.stderr)
    installed = os.path.join(prefix, "bin", "muster")
    package = os.path.join(prefix, "lib", "python3", "dist-packages")
    check(os.path.isfile(os.path.join(package, "muster", "__init__.py")),
          f"no package under {package}")
    # The installed tree alone: a copy of the worker outside the source, no PYTHONPATH.
    script = write_file(tempdir(), "worker.py", WORKER)
    code, out, err = run([installed, "--nproc-per-node", "1", "--no-prefix", script],
                         env=env_without_pythonpath(MUSTER_PYTHON=PYTHON), timeout=60)
    check(code == 0, f"the worker failed (exit {code})", out, err)
    check(said(out, "PACKAGE") == package, f"muster was imported from {said(out, 'PACKAGE')}",
          out)
    shutil.rmtree(prefix, ignore_errors=True)


@test
def python_dash_m_muster_runs_muster_on_that_interpreter():
    script = write_file(tempdir(), "worker.py", WORKER)
    env = env_without_pythonpath()
    env.pop("MUSTER_PYTHON", None)
    env["PYTHONPATH"] = os.path.join(SOURCE_DIR, "python")
    env["MUSTER_BIN"] = MUSTER
    code, out, err = run([PYTHON, "-m", "muster", "--nproc-per-node", "1", "--no-prefix", script],
                         env=env, timeout=60)
    check(code == 0, f"python -m muster exited {code}", out, err)
    check(said(out, "PYTHON") == PYTHON, f"the worker ran {said(out, 'PYTHON')}", out)
    check(said(out, "SIGNALS") == "SIGTERM,SIGINT,SIGHUP,SIGQUIT", out)


if __name__ == "__main__":
    run_tests()

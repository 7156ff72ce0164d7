"""The command lines of the first hour, with the real binaries: abbreviated
flags as torchrun's argparse takes them (checked against torch's own parser),
and musterd and `muster status` reading, answering and completing like muster.
"""
import os
import re
import socket
import subprocess

from harness import (BIN_DIR, MUSTER, PYTHON, SOURCE_DIR, base_env, check, run, run_muster,
                     start, test)
from elastic_harness import MUSTERD, start_musterd

ONE_LINE = re.compile(r"\A[^\n]+\n?\Z")


def refused(code, err, needle, what):
    check(code == 2, f"{what}: exit {code}, want 2", err)
    check(ONE_LINE.match(err) is not None, f"{what}: not one line: {err!r}")
    check(needle in err, f"{what}: {needle!r} not in {err!r}")


@test
def abbreviated_torchrun_flags_run_unchanged():
    code, out, err = run_muster(["--stand", "--nproc_per_nod", "2", "--no_py", "/bin/sh", "-c",
                                 "echo world=$WORLD_SIZE"])
    check(code == 0, f"exit {code}", err)
    check(out.count("world=2") == 2, "two workers of a world of 2", out)
    code, out, err = run_muster(["--nproc=2", "--no-prefix", "--no-python", "/bin/echo", "hi"])
    check(code == 0 and out.splitlines() == ["hi", "hi"], f"--nproc=2: exit {code}", out, err)


@test
def an_ambiguous_prefix_is_refused_naming_the_candidates_and_nothing_starts():
    marker = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"muster-ambiguous-{os.getpid()}")
    code, out, err = run_muster(["--gpu", "0", "--no-python", "/bin/touch", marker])
    refused(code, err, "ambiguous flag '--gpu' could match --gpus, --gpu-visibility", "--gpu")
    check(not os.path.exists(marker), "a worker ran")
    code, _, err = run_muster(["--nprocs-per-node", "2", "x.py"])
    refused(code, err, "unknown flag '--nprocs-per-node'; did you mean '--nproc-per-node'?",
            "a typo that is no prefix")


# torchrun's own parser (torch 1.13 under Debian's Python) decides these; muster
# must decide the same: accept the first, refuse the second.
TORCH_PARSE = r"""
import sys
from torch.distributed.run import get_args_parser
for line in sys.stdin:
    args = line.split()
    try:
        get_args_parser().parse_args(args + ["x.py"])
        print("ok")
    except SystemExit:
        print("refused")
"""
ABBREVIATED = [["--nproc_per_nod", "2"], ["--nnod", "1"], ["--max_re", "3"], ["--stand"],
               ["--rdzv_b", "static"], ["--monitor", "1"], ["--redir", "0"], ["--re", "0"]]
AMBIGUOUS = [["--rdzv", "x"], ["--ma", "1"], ["--local", "x"]]


@test
def muster_takes_and_refuses_the_abbreviations_torchrun_does():
    lines = "".join(" ".join(a) + "\n" for a in ABBREVIATED + AMBIGUOUS)
    proc = subprocess.run([PYTHON, "-c", TORCH_PARSE], input=lines, capture_output=True,
                          text=True, timeout=120)
    check(proc.returncode == 0, "torch's parser did not run", proc.stderr)
    verdicts = proc.stdout.split()
    check(verdicts == ["ok"] * len(ABBREVIATED) + ["refused"] * len(AMBIGUOUS),
          f"torch's own parser gave {verdicts}", proc.stderr)
    for args, verdict in zip(ABBREVIATED + AMBIGUOUS, verdicts):
        code, out, err = run_muster(["--dry-run"] + args + ["x.py"])
        mine = "ok" if code == 0 else "refused"
        check(mine == verdict, f"{args}: torchrun {verdict}, muster {mine} (exit {code})", err)
        if mine == "refused":
            refused(code, err, "ambiguous flag", str(args))


@test
def musterd_reads_its_flags_as_muster_does():
    code, out, err = run([MUSTERD, "--help"])
    check(code == 0 and out.startswith("usage: musterd [options]\n"), f"--help: exit {code}", out)
    check("\n  --port PORT\n" in out and "INT:INT" not in out, "muster's layout", out)
    check("\n  --token-file, --token_file FILE\n" in out, "both spellings", out)
    code, _, err = run([MUSTERD, "--prot", "0"])
    refused(code, err, "musterd: error: unknown flag '--prot'; did you mean '--port'?", "typo")
    code, _, err = run([MUSTERD, "--etcd-c", "x"])
    refused(code, err, "could match --etcd-cacert, --etcd-cert", "ambiguous")
    code, _, err = run([MUSTERD, "--port", "70000"])
    refused(code, err, "--port: '70000' must be an integer from 0 to 65535", "range")
    code, _, err = run([MUSTERD, "serve"])
    refused(code, err, "unexpected argument 'serve'", "operand")
    # Prefixes and underscores start a working daemon.
    proc = start([MUSTERD, "--ho", "127.0.0.1", "--po", "0", "--max_conn=50"])
    line = proc.stdout.readline()
    check(re.search(r"listening on 127\.0\.0\.1:\d+", line), f"did not start: {line!r}")


@test
def status_answers_like_muster_and_defaults_to_the_endpoint_a_job_here_uses():
    code, out, err = run_muster(["status", "--help"])
    check(code == 0 and "$PET_RDZV_ENDPOINT, else localhost:29400" in out, "help", out, err)
    code, _, err = run_muster(["status", "--jsno"])
    refused(code, err, "unknown flag '--jsno'; did you mean '--json'?", "status typo")
    code, _, err = run_muster(["status", "--rdzv-endpoint", ""])
    refused(code, err, "--rdzv-endpoint: ''", "empty endpoint")

    daemon, port = start_musterd()
    code, out, err = run_muster(["status", "--rdzv-e", f"127.0.0.1:{port}", "--js"])
    check(code == 0 and '"runs"' in out, f"prefixes: exit {code}", out, err)
    # PET_RDZV_ENDPOINT: what a muster started from this shell would use.
    env = base_env(PET_RDZV_ENDPOINT=f"127.0.0.1:{port}")
    code, out, err = run_muster(["status"], env=env)
    check(code == 0 and "no runs" in out, f"from PET_RDZV_ENDPOINT: exit {code}", out, err)
    code, out, err = run_muster(["status"], env=base_env(PET_RDZV_ENDPOINT="127.0.0.1:1"))
    check(code == 1 and "(endpoint from PET_RDZV_ENDPOINT)" in err, f"exit {code}", err)

    # Else localhost:29400, musterd's default port: a daemon there if the
    # port is free, else whatever holds it is asked and named.
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.1", 29400))
        free = True
    except OSError:
        free = False
    finally:
        probe.close()
    if free:
        default_daemon = start([MUSTERD, "--host", "127.0.0.1"])
        line = default_daemon.stdout.readline()
        check("listening on 127.0.0.1:29400" in line, f"musterd on its default port: {line!r}")
        code, out, err = run_muster(["status"])
        check(code == 0 and "no runs" in out, f"default endpoint: exit {code}", out, err)
        return
    # Held by something else: a daemon answers with its runs, anything else is
    # named in the one error line.
    code, out, err = run_muster(["status"])
    check((code == 0 and "runs" in out) or (code == 1 and "localhost:29400" in err),
          f"default endpoint: exit {code}", out, err)


COMPLETE = r"""
source "$1" || exit 3
compopt() { return 0; }
sim() {
  local fn=$1
  shift
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  "$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  echo "${COMPREPLY[*]}"
}
complete -p "$2" >/dev/null || exit 4
"""


def completions(program, *lines):
    script = os.path.join(SOURCE_DIR, "packaging", "completion", program)
    body = COMPLETE + "".join(f"sim _{program} {line}\n" for line in lines)
    proc = subprocess.run(["bash", "-c", body, "complete", script, program],
                          capture_output=True, text=True, timeout=30)
    check(proc.returncode == 0, f"bash exited {proc.returncode}", proc.stderr)
    return proc.stdout.splitlines()


@test
def musterd_has_bash_completion_like_muster():
    got = completions("musterd", "musterd --me", "musterd --etcd-c", "musterd --inject ''",
                      "musterd --port 0 --token_f")
    check(got == ["--metrics-port", "--etcd-cacert --etcd-cert", "crash-daemon,after=",
                  "--token_file"], f"musterd: {got}")
    got = completions("muster", "muster status --he", "muster status --rdzv-e")
    check(got == ["--help", "--rdzv-endpoint"], f"muster status: {got}")


if __name__ == "__main__":
    from harness import run_tests
    run_tests()

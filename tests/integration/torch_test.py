"""Real PyTorch under muster, unchanged scripts, on every torch version the
project targets: Debian's 1.13 on the host, 2.6 and 2.14 in chroots
(torch_versions.py). Each test runs once per version: name[1.13], name[2.6],
name[2.14]."""
import json
import os
import signal
import subprocess
import time

from elastic_harness import start_musterd, wait_exit
from harness import (MUSTER, TORCH_SCRIPTS, check, free_port, kill_tree, run_muster, run_tests,
                     start, tempdir, wait_for)
from torch_versions import each_version

DDP = os.path.join(TORCH_SCRIPTS, "ddp_gloo.py")
SNAPSHOT = os.path.join(TORCH_SCRIPTS, "ddp_snapshot.py")


def result_line(stdout, tag):
    for line in stdout.splitlines():
        if tag + " " in line:
            return json.loads(line.split(tag + " ", 1)[1])
    return None


def ddp_result(stdout):
    return result_line(stdout, "DDP_RESULT")


def communicate_all(procs, timeout):
    """(exit code, stdout, stderr) of each process; past `timeout`, every one
    is killed and the failure shows what each printed (a hang explains itself)."""
    outs = []
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            out, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
            outs.append((p.returncode, out, err))
    except subprocess.TimeoutExpired:
        for p in procs:
            kill_tree(p.pid)
        printed = [o + e for o, e in (p.communicate() for p in procs[len(outs):])]
        check(False, f"{len(procs) - len(outs)} of {len(procs)} processes still ran after "
              f"{timeout} s", *[o + e for _, o, e in outs], *printed)
    return outs


@each_version
def ddp_runs_unchanged_under_standalone_with_three_workers(version):
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "3", DDP], env=version.env(),
                                timeout=180)
    check(code == 0, f"exit {code}", out, err)
    result = ddp_result(out)
    check(result is not None, "no DDP_RESULT line", out, err)
    check(result["world_size"] == 3 and result["shards_disjoint"] and result["weights_equal"],
          str(result))


@each_version
def ddp_runs_under_static_two_nodes(version):
    port = free_port()
    common = ["--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
              "--master-port", str(port), DDP, "--epochs", "1"]
    nodes = [start([MUSTER, "--node-rank", str(n)] + common, env=version.env()) for n in (0, 1)]
    (c0, out0, err0), (c1, out1, err1) = communicate_all(nodes, 180)
    check(c0 == 0 and c1 == 0, f"exits {c0} {c1}", out0, err0, out1, err1)
    result = ddp_result(out0)
    check(result is not None and result["world_size"] == 4, f"result {result}", out0)
    check(result["weights_equal"] and result["shards_disjoint"], str(result))


def elastic_agent(port, nnodes, script_args, run_id="job", extra=()):
    return [MUSTER, "--nnodes", nnodes, "--nproc-per-node", "2", "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", run_id,
            "--rdzv-conf", "last_call_timeout=0.5", "--local-addr", "127.0.0.1"] + list(extra) + \
        list(script_args)


@each_version
def ddp_runs_under_the_elastic_rendezvous_with_two_nodes(version):
    daemon, port = start_musterd()
    agents = [start(elastic_agent(port, "2", [DDP, "--epochs", "1"]), env=version.env())
              for _ in range(2)]
    results = communicate_all(agents, 180)
    check(all(code == 0 for code, _, _ in results), f"exits {[r[0] for r in results]}",
          *[o + e for _, o, e in results])
    found = [ddp_result(out) for _, out, _ in results if ddp_result(out)]
    check(len(found) == 1 and found[0]["world_size"] == 4, f"results {found}")
    check(daemon.poll() is None, "musterd died")


@each_version
def torchruns_c10d_line_runs_with_no_daemon_the_agent_on_the_endpoint_host_serves(version):
    # `torchrun --rdzv-backend c10d --rdzv-endpoint HOST:PORT` on every node,
    # no daemon and no is_host: the agent on HOST serves the rendezvous.
    port = free_port()
    agents = [start([MUSTER, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                     "--rdzv-endpoint", f"localhost:{port}", "--rdzv-id", "c10d-line",
                     DDP, "--epochs", "1"], env=version.env()) for _ in range(2)]
    results = communicate_all(agents, 180)
    check(all(code == 0 for code, _, _ in results), f"exits {[r[0] for r in results]}",
          *[o + e for _, o, e in results])
    found = [ddp_result(out) for _, out, _ in results if ddp_result(out)]
    check(len(found) == 1 and found[0]["world_size"] == 4, f"results {found}")


@each_version
def launch_era_scripts_get_their_required_local_rank_argument(version):
    script = os.path.join(TORCH_SCRIPTS, "ddp_local_rank_arg.py")
    for spelling in ([], ["--local-rank-arg", "local-rank"]):
        code, out, err = run_muster(["launch", "--standalone", "--nproc-per-node", "2"] + spelling +
                                    [script], env=version.env(), timeout=120)
        check(code == 0, f"exit {code} with {spelling}", out, err)
        result = result_line(out, "LOCAL_RANK_ARG_RESULT")
        check(result == {"world_size": 2, "sum": 3.0}, f"result {result}", out, err)


@each_version
def a_failed_attempt_restarts_on_a_fresh_store_under_standalone(version):
    # Attempt 0 initialises gloo (its keys are in the store), then fails;
    # attempt 1 must rendezvous as if nothing came before. torch >= 2.6 adds
    # no per-attempt key prefix: stale keys would be read as attempt 1's.
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
                                 os.path.join(TORCH_SCRIPTS, "fail_first_attempt.py")],
                                env=version.env(), timeout=180)
    check(code == 0, f"exit {code}", out, err)
    result = ddp_result(out)
    check(result is not None and result["restart_count"] == 1, f"result {result}", out, err)


@each_version
def a_failed_attempt_restarts_on_a_fresh_store_under_a_static_rendezvous(version):
    code, out, err = run_muster(["--nnodes", "1", "--master-addr", "127.0.0.1", "--master-port",
                                 str(free_port()), "--nproc-per-node", "2", "--max-restarts", "1",
                                 os.path.join(TORCH_SCRIPTS, "fail_first_attempt.py")],
                                env=version.env(), timeout=180)
    check(code == 0, f"exit {code}", out, err)
    result = ddp_result(out)
    check(result is not None and result["restart_count"] == 1, f"result {result}", out, err)


def progress_lines(progress_dir):
    lines = []
    for name in os.listdir(progress_dir):
        with open(os.path.join(progress_dir, name)) as f:
            lines += [dict(kv.split("=") for kv in line.split()) for line in f if line.strip()]
    return lines


@each_version
def losing_an_agent_resumes_the_survivors_from_the_snapshot(version):
    # torchrun's elastic tutorial job: 3 nodes x 2 workers, a snapshot every
    # epoch; one agent is SIGKILLed mid-run. The survivors re-form at world
    # size 4 on a fresh store, load the snapshot and finish.
    work = tempdir()
    snapshot, progress = os.path.join(work, "snapshot.pt"), os.path.join(work, "progress")
    os.mkdir(progress)
    daemon, port = start_musterd()
    script = [SNAPSHOT, "--snapshot", snapshot, "--epochs", "8", "--step-sleep", "0.02",
              "--progress", progress]
    agents = [start(elastic_agent(port, "2:3", script), env=version.env()) for _ in range(3)]
    check(wait_for(lambda: any(int(p["epoch"]) >= 1 and p["world"] == "6"
                               for p in progress_lines(progress)), 120),
          f"no second epoch at world size 6: {progress_lines(progress)}")
    victim = agents[2]
    os.kill(victim.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    wait_exit(victim, 10)
    survivors = communicate_all(agents[:2], 180)
    check(all(code == 0 for code, _, _ in survivors), f"survivor exits {[s[0] for s in survivors]}",
          *[o + e for _, o, e in survivors])
    found = [result_line(out, "DDP_SNAPSHOT_RESULT") for _, out, _ in survivors]
    found = [r for r in found if r]
    check(len(found) == 1, f"results {found}")
    result = found[0]
    check(result["world_size"] == 4 and result["resumed_from"] >= 1 and result["weights_equal"],
          f"result {result}")
    after = [p for p in progress_lines(progress) if p["world"] == "4"]
    check(after, "no epoch was run at world size 4")
    print(f"  re-formed and finished {time.monotonic() - killed_at:.1f}s after the kill, "
          f"resumed from epoch {result['resumed_from']}", flush=True)
    check(daemon.poll() is None, "musterd died")


@each_version
def init_method_tcp_reaches_the_agent_store(version):
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2",
                                 os.path.join(TORCH_SCRIPTS, "ddp_tcp_init.py")],
                                env=version.env(), timeout=180)
    check(code == 0, f"exit {code}", out, err)
    result = result_line(out, "TCP_INIT_RESULT")
    check(result == {"world_size": 2, "sum": 3.0}, f"result {result}", out, err)


@each_version
def errors_recorded_by_torch_are_the_root_cause_in_the_report_and_the_error_file(version):
    # torch's @record writes the worker's exception to its own error file;
    # muster quotes it in the failure report and, when muster itself was
    # given TORCHELASTIC_ERROR_FILE (by a scheduler), writes the root cause
    # there in torch's format, with the worker's exit code as errorCode.
    work = tempdir()
    root_file = os.path.join(work, "root_cause.json")
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2",
                                 os.path.join(TORCH_SCRIPTS, "record_failure.py")],
                                env=version.env(TORCHELASTIC_ERROR_FILE=root_file), timeout=120)
    check(code == 1, f"exit {code}", out, err)
    check("rank 1 gives up on purpose" in err, "the report does not quote the recorded error", err)
    check(os.path.exists(root_file), "no root cause in TORCHELASTIC_ERROR_FILE", err)
    with open(root_file) as f:
        root = json.load(f)
    message = root["message"]
    check("ValueError: record_failure: rank 1 gives up on purpose" in message["message"],
          f"message {message}")
    check("py_callstack" in message["extraInfo"] and "timestamp" in message["extraInfo"],
          f"extraInfo {message.get('extraInfo')}")
    check(message["errorCode"] == 1, f"errorCode {message.get('errorCode')}")


if __name__ == "__main__":
    run_tests()

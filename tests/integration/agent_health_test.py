"""The agent's health endpoint (--health-port) against a real musterd: 200
while the rendezvous answers, 503 with the reason once it falls silent past
the fence timeout (the daemon SIGSTOPped), 200 again once it answers; a
stopped agent answers no probe (its loop serves them); a port that is taken
fails the start, naming the setting; --dry-run says where it would listen;
/metrics and an unknown path."""
import os
import re
import signal
import socket
import time
import urllib.error
import urllib.request

from elastic_harness import start_musterd
from harness import MUSTER, base_env, check, run_muster, run_tests, start, tempdir, test, wait_for, \
    write_file

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # scripts/install-deps.sh installs it; the regular expressions still check
    text_string_to_metric_families = None

HEALTH_LINE = re.compile(r"event=health_listening host=\S+ port=(\d+)")

# Waits for OUT/go, then exits 0; started again after a fence, it finds it.
WORKER = r'''
import os, sys, time
out = sys.argv[1]
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(out, "go")):
    if time.monotonic() > deadline:
        sys.exit(4)
    time.sleep(0.05)
'''


def get(port, path):
    """(status, body) of GET http://127.0.0.1:PORT/PATH; (None, why) when no answer came."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except (urllib.error.URLError, OSError) as error:
        return None, str(error)


def read(path):
    with open(path) as f:
        return f.read()


@test
def a_silent_rendezvous_turns_the_answer_503_until_it_answers_again():
    out = tempdir()
    script = write_file(out, "worker.py", WORKER)
    daemon, port = start_musterd()
    log_path = os.path.join(out, "agent.log")
    env = base_env(PET_HEALTH_PORT="0")
    with open(log_path, "w") as log:
        agent = start([MUSTER, "--nnodes", "1:2", "--nproc-per-node", "1", "--rdzv-backend",
                       "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "health",
                       "--rdzv-conf", "last_call_timeout=0.2", "--max-restarts", "3", script,
                       out], env=env, stdout=log, stderr=log)
    try:
        check(wait_for(lambda: HEALTH_LINE.search(read(log_path)), 20), "no health line",
              read(log_path))
        health = int(HEALTH_LINE.search(read(log_path)).group(1))
        check(wait_for(lambda: "started 1 workers" in read(log_path), 20), "no workers",
              read(log_path))
        status, body = get(health, "/healthz")
        check(status == 200 and body == "ok\n", f"running: {status} {body!r}", read(log_path))

        status, body = get(health, "/metrics")
        check(status == 200, f"/metrics {status} {body!r}")
        for series in ("muster_store_refused_total 0", "muster_agent_healthy 1",
                       "muster_agent_generation 1"):
            check(re.search(f"^{series}$", body, re.M), f"{series} not in {body!r}")
        check(re.search(r"^muster_agent_rendezvous_silence_seconds [0-9.e-]+$", body, re.M), body)
        if text_string_to_metric_families is not None:
            # As Prometheus reads it: every sample unlabelled, of the type announced.
            parsed = {s.name: (family.type, s.labels, s.value)
                      for family in text_string_to_metric_families(body) for s in family.samples}
            check(parsed.get("muster_store_refused_total") == ("counter", {}, 0.0), str(parsed))
            check(parsed.get("muster_agent_healthy") == ("gauge", {}, 1.0), str(parsed))
            check(parsed.get("muster_agent_generation") == ("gauge", {}, 1.0), str(parsed))
        status, body = get(health, "/nothing")
        check(status == 404, f"/nothing {status} {body!r}")

        os.kill(daemon.pid, signal.SIGSTOP)
        seen = []

        def failing():
            seen.append(get(health, "/healthz"))
            return seen[-1][0] == 503

        check(wait_for(failing, 10, interval=0.1), f"never 503: {seen[-3:]}", read(log_path))
        check(seen[-1][1].startswith("no answer from the rendezvous for "), repr(seen[-1][1]))
        os.kill(daemon.pid, signal.SIGCONT)
        check(wait_for(lambda: get(health, "/healthz")[0] == 200, 15, interval=0.1),
              "never 200 again", read(log_path))
        check("event=health_failing" in read(log_path), "the change is not logged", read(log_path))

        write_file(out, "go", "")
        code = agent.wait(timeout=60)
        check(code == 0, f"agent exited {code}", read(log_path))
    finally:
        if daemon.poll() is None:
            os.kill(daemon.pid, signal.SIGCONT)


@test
def contact_is_judged_by_the_daemons_timing_not_the_agents_own():
    # Started with heartbeat_timeout=10 (a fence after 8 s of its own) under a default
    # musterd: it fences after the daemon's 1 s, and its answer turns 503 as soon.
    out = tempdir()
    script = write_file(out, "worker.py", WORKER)
    daemon, port = start_musterd()
    log_path = os.path.join(out, "agent.log")
    with open(log_path, "w") as log:
        agent = start([MUSTER, "--nnodes", "1:2", "--nproc-per-node", "1", "--rdzv-backend",
                       "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "timing",
                       "--rdzv-conf", "last_call_timeout=0.2,heartbeat_timeout=10", script, out],
                      env=base_env(PET_HEALTH_PORT="0"), stdout=log, stderr=log)
    try:
        check(wait_for(lambda: "started 1 workers" in read(log_path), 20), "no workers",
              read(log_path))
        health = int(HEALTH_LINE.search(read(log_path)).group(1))
        check(get(health, "/healthz") == (200, "ok\n"), "running", read(log_path))
        os.kill(daemon.pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        check(wait_for(lambda: get(health, "/healthz")[0] == 503, 4, interval=0.1),
              "still 200 4 s after the daemon stopped: judged by the agent's own 8 s",
              read(log_path))
        print(f"daemon stopped -> 503: {time.monotonic() - stopped_at:.3f}s", flush=True)
        check("event=fence" in read(log_path), "no fence", read(log_path))
    finally:
        # The agent, its workers and musterd are killed when the test ends (harness.start).
        if daemon.poll() is None:
            os.kill(daemon.pid, signal.SIGCONT)


@test
def a_stopped_agent_answers_no_probe_and_answers_again_once_it_runs():
    out = tempdir()
    script = write_file(out, "worker.py", WORKER)
    log_path = os.path.join(out, "agent.log")
    with open(log_path, "w") as log:
        agent = start([MUSTER, "--nproc-per-node", "1", script, out],
                      env=base_env(TORCHELASTIC_HEALTH_CHECK_PORT="0"), stdout=log, stderr=log)
    check(wait_for(lambda: HEALTH_LINE.search(read(log_path)), 20), "no health line",
          read(log_path))
    health = int(HEALTH_LINE.search(read(log_path)).group(1))
    check(get(health, "/healthz") == (200, "ok\n"), "a static run is healthy", read(log_path))
    os.kill(agent.pid, signal.SIGSTOP)
    try:
        status, why = get(health, "/healthz")
        check(status is None, f"a stopped agent answered {status} {why!r}")
    finally:
        os.kill(agent.pid, signal.SIGCONT)
    check(wait_for(lambda: get(health, "/healthz")[0] == 200, 10, interval=0.1),
          "never 200 again", read(log_path))
    write_file(out, "go", "")
    code = agent.wait(timeout=60)
    check(code == 0, f"agent exited {code}", read(log_path))


@test
def a_taken_port_fails_the_start_naming_the_setting():
    holder = socket.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen()
    taken = holder.getsockname()[1]
    try:
        code, _, err = run_muster(["--health-port", str(taken), "--no-python", "true"],
                                  env=base_env(), timeout=30)
        check(code == 1 and "--health-port" in err, f"exit {code}", err)
        code, _, err = run_muster(["--no-python", "true"],
                                  env=base_env(TORCHELASTIC_HEALTH_CHECK_PORT=str(taken)),
                                  timeout=30)
        check(code == 1 and "TORCHELASTIC_HEALTH_CHECK_PORT" in err, f"exit {code}", err)
    finally:
        holder.close()
    code, out, err = run_muster(["--dry-run", "--no-python", "true"],
                                env=base_env(TORCHELASTIC_HEALTH_CHECK_PORT="8080"), timeout=30)
    check(code == 0 and "health endpoint: 0.0.0.0:8080 (from TORCHELASTIC_HEALTH_CHECK_PORT)" in out,
          f"--dry-run exit {code}", out, err)
    # No port asked: no endpoint, no line.
    code, _, err = run_muster(["--no-python", "true"], env=base_env(), timeout=30)
    check(code == 0 and "health_listening" not in err, f"exit {code}", err)


if __name__ == "__main__":
    run_tests()

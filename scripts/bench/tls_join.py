"""What the TLS handshake adds to an agent's join on loopback: plain against
mutual TLS, in the same run, alternated.

usage: tls_join.py [--samples N] [--agent-samples M] [--build-dir DIR]

Two daemons run side by side on 127.0.0.1, one plain and one with
--tls-cert/--tls-key/--tls-client-ca (certificates from tls_certs.sh in a
temporary directory). Each sample joins a fresh run of one node on one of
them, the next sample on the other (which goes first alternates), so load on
the machine falls on both alike.

Row 1, the protocol: `rdzv_load --nodes 1 --until-assigned`, one simulated
agent per sample, timed inside the process (rdzv_load.cc, "phase_ms"): TCP
connect; TLS handshake (the client's: it ends once it has sent its Finished;
the daemon checks the client certificate when it reads it, which falls in
Hello → Welcome); Hello → Welcome; Join → assignment; and the whole join,
connect started → assignment. Process start and loading the certificates
are outside it.

Row 2, a real agent: `muster --nnodes 1:2 --no-python true` against each
daemon (mutual TLS through --rdzv-conf tls_ca,tls_cert,tls_key), timed from
the spawn to its "event=waiting" line (joined: the daemon answered the Join)
and to its "event=generation" line (assignment logged). The daemons run with
last_call_timeout=0.001, so the round closes at the first daemon tick after
the join. The agent's start (exec, its store, loading the certificates) is
inside these spans: the difference is what a user sees.

Printed per phase: the median and 90th percentile of each mode, and the
difference of the medians. Target: TLS adds ≤ 20 ms to the join (the
difference of the whole join's medians, row 1). Exits 1 on a miss or a
failed sample. The 1-minute load average is printed at the start and end.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TARGET_MS = 20.0
PHASES = [("tcp_connect", "TCP connect"), ("tls_handshake", "TLS handshake"),
          ("hello_to_welcome", "Hello → Welcome"), ("join_to_assignment", "Join → assignment"),
          ("connect_to_assignment", "whole join (connect → assignment)")]
AGENT_SPANS = [("waiting", "agent start → joined (event=waiting)"),
               ("generation", "agent start → assignment logged (event=generation)")]


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def percentile(values, q):
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(round(q / 100.0 * len(ordered) + 0.5))))
    return ordered[rank - 1]


def median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def start_daemon(bin_dir, work, mode, tls_args):
    out = open(os.path.join(work, f"musterd.{mode}.out"), "w+")
    log = open(os.path.join(work, f"musterd.{mode}.log"), "w")
    proc = subprocess.Popen([os.path.join(bin_dir, "musterd"), "--host", "127.0.0.1", "--port",
                             "0", "--rdzv-conf", "last_call_timeout=0.001"] + tls_args,
                            stdout=out, stderr=log)
    for _ in range(100):
        out.seek(0)
        m = re.search(r"^musterd listening on .*:(\d+)$", out.read(), re.M)
        if m:
            return proc, int(m.group(1))
        time.sleep(0.05)
    proc.kill()
    sys.exit(f"tls_join.py: musterd ({mode}) did not start; see {log.name}")


def protocol_sample(bin_dir, daemon, port, run_id, load_tls):
    out = subprocess.run([os.path.join(bin_dir, "rdzv_load"), "--host", "127.0.0.1", "--port",
                          str(port), "--nodes", "1", "--until-assigned", "--timeout-seconds", "30",
                          "--musterd-pid", str(daemon.pid), "--run-id", run_id] + load_tls,
                         capture_output=True, text=True, timeout=60)
    lines = out.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {}
    if out.returncode != 0 or not result.get("ok"):
        sys.exit(f"tls_join.py: sample {run_id} failed: {result.get('error') or out.stderr}")
    return result["phase_ms"]


def agent_sample(bin_dir, port, run_id, conf):
    env = dict(os.environ, MUSTER_LOG_LEVEL="info")
    rdzv_conf = ",".join(["last_call_timeout=0.001"] + conf)
    start = time.monotonic()
    proc = subprocess.Popen([os.path.join(bin_dir, "muster"), "--nnodes", "1:2",
                             "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                             f"127.0.0.1:{port}", "--rdzv-id", run_id, "--rdzv-conf", rdzv_conf,
                             "--no-python", "true"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    spans, seen = {}, []
    for line in proc.stderr:
        seen.append(line.rstrip())
        for key, _ in AGENT_SPANS:
            if f"event={key} " in line and key not in spans:
                spans[key] = (time.monotonic() - start) * 1000.0
    proc.wait(timeout=30)
    if proc.returncode != 0 or len(spans) != len(AGENT_SPANS):
        sys.exit(f"tls_join.py: agent {run_id} exited {proc.returncode}:\n" + "\n".join(seen[-5:]))
    return spans


def table(title, rows, samples):
    """rows: (label, plain values, TLS values); prints medians, p90 and the difference."""
    print(f"| {title} | plain median | plain p90 | mutual TLS median | mutual TLS p90 "
          "| TLS − plain (medians) |")
    print("|:---|---:|---:|---:|---:|---:|")
    for label, plain, tls in rows:
        if not tls:
            continue
        p = (f"{median(plain):.2f} ms", f"{percentile(plain, 90):.2f} ms") if plain else ("—", "—")
        diff = f"{median(tls) - median(plain):+.2f} ms" if plain else f"{median(tls):+.2f} ms"
        print(f"| {label} | {p[0]} | {p[1]} | {median(tls):.2f} ms "
              f"| {percentile(tls, 90):.2f} ms | {diff} |")
    print(f"({samples} samples per mode)")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200, help="rdzv_load joins per mode")
    parser.add_argument("--agent-samples", type=int, default=100,
                        help="real agent joins per mode (0: none)")
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench"))
    args = parser.parse_args()
    bin_dir = os.path.join(args.build_dir, "bin")

    with tempfile.TemporaryDirectory() as work:
        subprocess.run([os.path.join(HERE, "tls_certs.sh"), work], check=True)
        cert = lambda name: os.path.join(work, name)
        daemons = {
            "plain": start_daemon(bin_dir, work, "plain", []),
            "tls": start_daemon(bin_dir, work, "tls", ["--tls-cert", cert("musterd.pem"),
                                                       "--tls-key", cert("musterd.key"),
                                                       "--tls-client-ca", cert("ca.pem")]),
        }
        load_tls = {"plain": [], "tls": ["--tls-ca", cert("ca.pem"), "--tls-cert",
                                         cert("agent.pem"), "--tls-key", cert("agent.key")]}
        agent_tls = {"plain": [], "tls": [f"tls_ca={cert('ca.pem')}",
                                          f"tls_cert={cert('agent.pem')}",
                                          f"tls_key={cert('agent.key')}"]}
        load_start = loadavg()
        try:
            phases = {"plain": [], "tls": []}
            for i in range(args.samples):
                for mode in (("plain", "tls") if i % 2 == 0 else ("tls", "plain")):
                    daemon, port = daemons[mode]
                    phases[mode].append(
                        protocol_sample(bin_dir, daemon, port, f"p{i}{mode}", load_tls[mode]))
            agents = {"plain": [], "tls": []}
            for i in range(args.agent_samples):
                for mode in (("plain", "tls") if i % 2 == 0 else ("tls", "plain")):
                    agents[mode].append(
                        agent_sample(bin_dir, daemons[mode][1], f"a{i}{mode}", agent_tls[mode]))
        finally:
            for daemon, _ in daemons.values():
                daemon.terminate()
                daemon.wait(timeout=10)
        load_end = loadavg()

    print(f"load average (1 min): {load_start:.1f} at the start, {load_end:.1f} at the end")
    print()
    values = lambda rows, key: [r[key] for r in rows if r.get(key) is not None]
    table("rdzv_load, one agent", [(label, values(phases["plain"], key),
                                    values(phases["tls"], key)) for key, label in PHASES],
          args.samples)
    if args.agent_samples:
        table("muster agent", [(label, values(agents["plain"], key), values(agents["tls"], key))
                               for key, label in AGENT_SPANS], args.agent_samples)
    added = (median(values(phases["tls"], "connect_to_assignment")) -
             median(values(phases["plain"], "connect_to_assignment")))
    verdict = "met" if added <= TARGET_MS else "MISSED"
    print(f"Target: TLS adds ≤ {TARGET_MS:.0f} ms to the join; it adds {added:.2f} ms "
          f"(whole join, medians): {verdict}")
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    sys.exit(main())

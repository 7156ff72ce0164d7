"""musterd's /metrics read by the Prometheus client's own text-format parser
(Debian's python3-prometheus-client): every per-run family is there with the
label sets documented in rendezvous/daemon/run_metrics.h and values that match
the jobs; per-node series appear only under --node-metrics; the port asks
for the daemon's token (Bearer, or Basic as a browser sends it) and, under
its TLS, serves the page, /status.json and /metrics over HTTPS only, and
under mutual TLS only to a client with a certificate from the client CA; the
port listens on --host's address only; /metrics names no address, token or
certificate; the Grafana dashboard queries only metrics musterd serves.
"""
import ipaddress
import socket
import base64
import json
import os
import re
import ssl
import subprocess
import urllib.error
import urllib.request

from elastic_harness import MUSTERD, bound_port, start_agent, start_musterd, wait_generation
from harness import (SOURCE_DIR, Skip, check, free_port, run_tests, start, tempdir, test,
                     wait_for, write_file)

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # scripts/install-deps.sh installs it
    text_string_to_metric_families = None

RUN_FAMILIES = {
    "muster_run_state": {"run", "state"},
    "muster_run_generation": {"run"},
    "muster_run_world_size": {"run"},
    "muster_run_nodes": {"run", "state"},
    "muster_run_restarts": {"run"},
    "muster_run_restart_budget": {"run"},
}


def scrape(port, headers=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers or {})
    return urllib.request.urlopen(request, timeout=5).read().decode()


def samples(text):
    """{family: [(labels dict, value)]}, parsed as Prometheus parses it."""
    if text_string_to_metric_families is None:
        raise Skip("python3-prometheus-client is not installed (scripts/install-deps.sh)")
    return {family.name: [(s.labels, s.value) for s in family.samples]
            for family in text_string_to_metric_families(text)}


def value(parsed, family, **labels):
    found = [v for (l, v) in parsed.get(family, []) if l == labels]
    check(len(found) == 1, f"{family}{labels}: {len(found)} samples", parsed.get(family))
    return found[0]


@test
def per_run_metrics_carry_the_run_label_and_match_the_jobs():
    metrics_port = free_port()
    daemon, port = start_musterd(extra=["--metrics-port", str(metrics_port),
                                        "--node-metrics", "4"])
    alpha, beta = tempdir(), tempdir()
    for _ in range(2):
        start_agent(port, alpha, nnodes="2:2", nproc=2, run_id="alpha")
    start_agent(port, beta, nnodes="2:2", nproc=1, run_id="beta",
                extra=["--max-restarts", "3"])
    wait_generation(alpha, 4)
    check(wait_for(lambda: 'run="beta"' in scrape(metrics_port), 10), "run beta never appeared")
    parsed = samples(scrape(metrics_port))

    for family, label_names in RUN_FAMILIES.items():
        check(family in parsed, f"{family} missing", sorted(parsed))
        for labels, _ in parsed[family]:
            check(set(labels) == label_names, f"{family} has labels {labels}")
    check(value(parsed, "muster_run_state", run="alpha", state="running") == 1, parsed)
    check(value(parsed, "muster_run_generation", run="alpha") >= 1, parsed)
    check(value(parsed, "muster_run_world_size", run="alpha") == 4, parsed)
    check(value(parsed, "muster_run_nodes", run="alpha", state="member") == 2, parsed)
    check(value(parsed, "muster_run_nodes", run="alpha", state="waiting") == 0, parsed)
    check(value(parsed, "muster_run_nodes", run="beta", state="waiting") == 1, parsed)
    check(value(parsed, "muster_run_generation", run="beta") == 0, parsed)
    check(value(parsed, "muster_run_restart_budget", run="beta") == 3, parsed)
    check(value(parsed, "muster_run_restarts", run="alpha") == 0, parsed)

    ages = parsed.get("muster_node_heartbeat_age_seconds", [])
    check(len(ages) == 3, f"per-node series: {ages}")
    for labels, age in ages:
        check(set(labels) == {"run", "node", "host"} and 0 <= age < 5, f"node series {labels}")


@test
def no_per_node_series_by_default():
    metrics_port = free_port()
    daemon, port = start_musterd(extra=["--metrics-port", str(metrics_port)])
    out = tempdir()
    for _ in range(2):
        start_agent(port, out, nnodes="2:2", nproc=1)
    wait_generation(out, 2)
    parsed = samples(scrape(metrics_port))
    check(value(parsed, "muster_run_nodes", run="job", state="member") == 2, parsed)
    check(not [f for f in parsed if f.startswith("muster_node_")], sorted(parsed))


@test
def the_metrics_port_asks_for_the_daemons_token():
    token = "t0ken-for-metrics"
    token_file = write_file(tempdir(), "token", token + "\n")
    os.chmod(token_file, 0o600)
    metrics_port = free_port()
    start_musterd(extra=["--metrics-port", str(metrics_port), "--token-file", token_file])
    try:
        scrape(metrics_port)
        check(False, "/metrics answered without the token")
    except urllib.error.HTTPError as e:
        check(e.code == 401 and "Basic" in e.headers.get("WWW-Authenticate", ""),
              f"without the token: {e.code} {dict(e.headers)}")
    parsed = samples(scrape(metrics_port, {"Authorization": f"Bearer {token}"}))
    check("muster_run_state" in parsed, sorted(parsed))
    basic = base64.b64encode(f"ops:{token}".encode()).decode()
    text = scrape(metrics_port, {"Authorization": f"Basic {basic}"})
    check("muster_runs " in text, text)


@test
def metrics_name_no_address_token_or_certificate():
    certs = tempdir()
    subprocess.run([os.path.join(SOURCE_DIR, "scripts", "bench", "tls_certs.sh"), certs], check=True)
    token = "metrics-secret-token"
    token_file = write_file(certs, "token", token + "\n")
    os.chmod(token_file, 0o600)
    metrics_port = free_port()
    daemon, port = start_musterd(extra=[
        "--metrics-port", str(metrics_port), "--node-metrics", "4", "--token-file", token_file,
        "--tls-cert", os.path.join(certs, "musterd.pem"),
        "--tls-key", os.path.join(certs, "musterd.key")])
    out = tempdir()
    conf = f"tls_ca={os.path.join(certs, 'ca.pem')},token_file={token_file}"
    for _ in range(2):
        start_agent(port, out, nnodes="2:2", nproc=1, conf=conf)
    gen = wait_generation(out, 2)
    store_port = json.load(open(os.path.join(out, f"g{gen}_r0.json")))["env"]["MASTER_PORT"]
    context = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
    request = urllib.request.Request(f"https://127.0.0.1:{metrics_port}/metrics",
                                     headers={"Authorization": f"Bearer {token}"})
    text = urllib.request.urlopen(request, timeout=5, context=context).read().decode()
    parsed = samples(text)
    check("muster_node_heartbeat_age_seconds" in parsed, "per-node series are on", sorted(parsed))
    pem = {open(os.path.join(certs, name)).read().split("\n")[1]
           for name in ("ca.pem", "musterd.pem", "musterd.key")}
    check(token not in text and "BEGIN" not in text and not any(p in text for p in pem),
          "no token or certificate in /metrics", text)
    for family, series in parsed.items():
        for labels, _ in series:
            for name, label in labels.items():
                try:
                    ipaddress.ip_address(label.split("%")[0])
                    check(False, f"{family}{{{name}={label!r}}} is an address")
                except ValueError:
                    pass
                check(store_port not in label and "127.0.0.1" not in label,
                      f"{family}{{{name}={label!r}}} names the store or an address")


@test
def the_metrics_port_listens_on_the_hosts_address_only():
    metrics_port = free_port()
    daemon = start([MUSTERD, "--host", "127.0.0.2", "--port", "0", "--metrics-port",
                    str(metrics_port)], stderr=subprocess.PIPE)
    check(bound_port(daemon.stdout.readline()) is not None, "musterd started on 127.0.0.2")
    body = urllib.request.urlopen(f"http://127.0.0.2:{metrics_port}/metrics", timeout=5).read()
    check(b"muster_runs " in body, body[:200])
    try:
        socket.create_connection(("127.0.0.1", metrics_port), timeout=2).close()
        check(False, f"the metrics port answered on 127.0.0.1:{metrics_port}")
    except ConnectionRefusedError:
        pass


@test
def over_tls_the_page_json_and_metrics_answer_https_with_the_token_and_not_plain_http():
    certs = tempdir()
    subprocess.run([os.path.join(SOURCE_DIR, "scripts", "bench", "tls_certs.sh"), certs], check=True)
    token = "page-token"
    token_file = write_file(certs, "token", token + "\n")
    os.chmod(token_file, 0o600)
    metrics_port = free_port()
    start_musterd(extra=["--metrics-port", str(metrics_port), "--token-file", token_file,
                         "--tls-cert", os.path.join(certs, "musterd.pem"),
                         "--tls-key", os.path.join(certs, "musterd.key")])
    context = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
    auth = {"Authorization": f"Bearer {token}"}
    for path, expect in (("/", "<html"), ("/status.json", '"runs"'), ("/metrics", "muster_runs ")):
        request = urllib.request.Request(f"https://127.0.0.1:{metrics_port}{path}", headers=auth)
        body = urllib.request.urlopen(request, timeout=5, context=context).read().decode()
        check(expect in body, f"https {path}: {body[:200]}")
    try:
        urllib.request.urlopen(urllib.request.Request(f"https://127.0.0.1:{metrics_port}/"),
                               timeout=5, context=context)
        check(False, "the page answered over TLS without the token")
    except urllib.error.HTTPError as e:
        check(e.code == 401, f"without the token: {e.code}")
    try:
        scrape(metrics_port, auth)
        check(False, "plain http answered on the TLS port")
    except urllib.error.HTTPError as e:
        check(e.code == 400 and b"speaks HTTPS" in e.read(), f"plain http: {e.code}")

    # Under mutual TLS the port asks for a client certificate from the client CA.
    mutual_port = free_port()
    start_musterd(extra=["--metrics-port", str(mutual_port), "--token-file", token_file,
                         "--tls-cert", os.path.join(certs, "musterd.pem"),
                         "--tls-key", os.path.join(certs, "musterd.key"),
                         "--tls-client-ca", os.path.join(certs, "ca.pem")])
    request = urllib.request.Request(f"https://127.0.0.1:{mutual_port}/metrics", headers=auth)
    try:
        urllib.request.urlopen(request, timeout=5, context=context).read()
        check(False, "the metrics port answered a client without a certificate")
    except (urllib.error.URLError, ssl.SSLError, ConnectionError) as e:
        # Refused in the handshake, not answered (an HTTPError is an answer).
        check(not isinstance(e, urllib.error.HTTPError), f"answered: {e!r}")
        print(f"without a client certificate: {e!r}", flush=True)
    certified = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
    certified.load_cert_chain(os.path.join(certs, "agent.pem"), os.path.join(certs, "agent.key"))
    body = urllib.request.urlopen(request, timeout=5, context=certified).read().decode()
    check("muster_runs " in body, f"with a client certificate: {body[:200]}")


@test
def the_grafana_dashboard_is_json_and_uses_only_metrics_musterd_serves():
    path = os.path.join(SOURCE_DIR, "packaging", "grafana", "muster-dashboard.json")
    with open(path) as f:
        dashboard = json.load(f)
    metrics_port = free_port()
    start_musterd(extra=["--metrics-port", str(metrics_port)])
    # A daemon with no run still writes every family's TYPE line.
    served = set(re.findall(r"^# TYPE (\S+) ", scrape(metrics_port), re.MULTILINE))
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    queries += [variable["definition"] for variable in dashboard["templating"]["list"]]
    used = {name for query in queries for name in re.findall(r"\bmuster_[a-z_]+", query)}
    check(queries and used, "the dashboard queries nothing")
    check(used <= served, f"the dashboard uses metrics musterd does not serve: {sorted(used - served)}")
    per_run = {name for name in served if name.startswith("muster_run_")}
    check(per_run <= used, f"per-run metrics with no panel: {sorted(per_run - used)}")


if __name__ == "__main__":
    run_tests()

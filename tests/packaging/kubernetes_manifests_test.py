#!/usr/bin/env python3
"""The manifests in docs/kubernetes.md are valid YAML and agree with muster.

    python3 tests/packaging/kubernetes_manifests_test.py --bin-dir build/bin --source-dir .

Fails (exit 1, listing each problem) when a ```yaml block does not parse, or
in any pod template of it:
  - a flag given to `muster` (before the script) or `musterd` (command or
    args) is not one their --help prints, or a PET_ variable names no
    `muster` flag;
  - a probe's port is a name no container port of that container has;
  - a podFailurePolicy names a container the pod does not have, or its pod's
    restartPolicy is not Never (Kubernetes refuses it);
  - terminationGracePeriodSeconds is not longer than the container's
    --shutdown-timeout (PET_SHUTDOWN_TIMEOUT, default 30).
Needs PyYAML (python3-yaml); exits 77 (skipped) without it.
"""
import argparse
import os
import re
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("SKIP: no PyYAML (python3-yaml)")
    sys.exit(77)

LONG_FLAG = re.compile(r"(?<![\w-])--[A-Za-z0-9][\w-]*")
DEFAULT_SHUTDOWN_TIMEOUT = 30

problems = []


def problem(what):
    problems.append(what)
    print("PROBLEM: " + what)


def help_flags(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout
    return set(LONG_FLAG.findall(out))


def yaml_blocks(text):
    return re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)


def walk(node):
    """Every mapping in `node`, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def check_container(where, container, flags, grace):
    command = list(container.get("command", [])) + list(container.get("args", []))
    program = os.path.basename(command[0]) if command else ""
    for word in command[1:]:
        if word.endswith(".py"):
            break  # the script: what follows is its own
        flag = word.split("=", 1)[0]
        if program in flags and flag.startswith("--") and flag not in flags[program]:
            problem(f"{where}: {program} has no flag {flag}")
    shutdown = DEFAULT_SHUTDOWN_TIMEOUT
    for env in container.get("env", []):
        name = env.get("name", "")
        if name.startswith("PET_"):
            flag = "--" + name[4:].lower().replace("_", "-")
            if flag not in flags["muster"]:
                problem(f"{where}: {name} names no muster flag ({flag})")
        if name == "PET_SHUTDOWN_TIMEOUT":
            shutdown = float(env["value"])
    if "--shutdown-timeout" in command:
        shutdown = float(command[command.index("--shutdown-timeout") + 1])
    if program == "muster" and grace is not None and grace <= shutdown:
        problem(f"{where}: terminationGracePeriodSeconds {grace} is not longer than "
                f"--shutdown-timeout {shutdown}")
    port_names = {p.get("name") for p in container.get("ports", [])}
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        for kind in ("httpGet", "tcpSocket"):
            port = container.get(probe, {}).get(kind, {}).get("port")
            if isinstance(port, str) and port not in port_names:
                problem(f"{where}: {probe} port {port!r} is not a port of the container")


def check_pod_spec(where, spec, flags, failure_policy):
    containers = spec.get("containers", [])
    names = {c.get("name") for c in containers}
    grace = spec.get("terminationGracePeriodSeconds")
    for container in containers:
        check_container(f"{where} container {container.get('name')}", container, flags, grace)
    if failure_policy:
        if spec.get("restartPolicy") != "Never":
            problem(f"{where}: podFailurePolicy needs restartPolicy Never")
        for rule in failure_policy.get("rules", []):
            name = rule.get("onExitCodes", {}).get("containerName")
            if name is not None and name not in names:
                problem(f"{where}: podFailurePolicy names container {name!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    flags = {name: help_flags(os.path.join(args.bin_dir, name)) for name in ("muster", "musterd")}
    with open(os.path.join(args.source_dir, "docs", "kubernetes.md")) as f:
        blocks = yaml_blocks(f.read())
    pods = 0
    for index, block in enumerate(blocks):
        try:
            documents = [d for d in yaml.safe_load_all(block) if d is not None]
        except yaml.YAMLError as error:
            problem(f"yaml block {index + 1} does not parse: {error}")
            continue
        for document in documents:
            for mapping in walk(document):
                template = mapping.get("template")
                if isinstance(template, dict) and "containers" in template.get("spec", {}):
                    pods += 1
                    check_pod_spec(f"yaml block {index + 1}", template["spec"], flags,
                                   mapping.get("podFailurePolicy"))
    if pods == 0:
        problem("no pod template found in docs/kubernetes.md")
    if problems:
        print(f"{len(problems)} problems in docs/kubernetes.md")
        return 1
    print(f"OK: {len(blocks)} yaml blocks, {pods} pod templates agree with muster and musterd")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Hosts in network namespaces for multi-host tests.

tests/fixtures/netns_hosts.sh puts each "host" (and a daemon namespace) in its
own network namespace on a Linux bridge. Cutting a host's bridge port (`ip link
set DEV down` on the veth end in the root namespace) makes it vanish silently:
no RST, its connections just hang. Needs root.
"""
import os
import subprocess

from harness import base_env, kill_tree, tempdir, wait_for
from testlib import netns
from testlib.ports import bound_port

SUBNET = "10.213.7"  # a private /24; the bridge has no address, so the root namespace never routes it
DAEMON_ADDR = f"{SUBNET}.1"
PREFIX_STEM = "mn"  # namespaces mn<pid>-d, mn<pid>-h<i>; bridge mn<pid>-br


def host_addr(i):
    return f"{SUBNET}.{10 + i}"


class Hosts(netns.BridgeHosts):
    """N namespaces PREFIX-h1..hN plus PREFIX-d on a bridge; torn down on exit.

    Processes started with spawn() run inside a namespace; on exit they are
    killed by PID, then every process still in one of the namespaces, then
    `hosts.sh down` removes veths, namespaces and bridge.
    """

    def __init__(self, n):
        # unique per run; names stay within 15 characters
        super().__init__(n, f"{PREFIX_STEM}{os.getpid()}", SUBNET)
        self.procs = []
        self.logs = tempdir()

    def __enter__(self):
        try:
            self.up()
        except netns.NetnsError as e:
            self.__exit__(None, None, None)
            raise AssertionError(str(e)) from e
        return self

    def spawn(self, ns, args, name, env=None):
        """Starts args inside namespace ns (ip netns exec execs them: the PID is theirs),
        with `env` (default: the harness's base environment)."""
        out = open(os.path.join(self.logs, f"{name}.out"), "w")
        err = open(os.path.join(self.logs, f"{name}.err"), "w")
        proc = subprocess.Popen(["ip", "netns", "exec", ns] + list(args), env=env or base_env(),
                                stdout=out, stderr=err, start_new_session=True)
        out.close()
        err.close()
        proc.log_name = name
        self.procs.append(proc)
        return proc

    def log(self, proc, stream="err"):
        with open(os.path.join(self.logs, f"{proc.log_name}.{stream}")) as f:
            return f.read()

    def start_musterd(self, musterd):
        """Starts `musterd` in the daemon namespace on DAEMON_ADDR; returns (process, port)."""
        proc = self.spawn(self.prefix + "-d", [musterd, "--host", DAEMON_ADDR, "--port", "0"],
                          "musterd")
        found = {}

        def listening():
            port = bound_port(self.log(proc, "out"))
            if port is not None:
                found["port"] = port
            return port is not None or proc.poll() is not None

        wait_for(listening, 10)
        if "port" not in found:
            raise AssertionError(f"musterd did not start (exit {proc.poll()})\n{self.log(proc)}")
        return proc, found["port"]

    def __exit__(self, *exc):
        for proc in self.procs:
            if proc.poll() is None:
                kill_tree(proc.pid)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        # Workers lead their own process groups: down() kills whatever the namespaces
        # still hold before it removes them.
        self.down()
        return False


def remove_stale_hosts():
    """Tears down namespaces of earlier runs that died before their teardown (SIGKILL)."""
    netns.remove_stale_bridges(PREFIX_STEM)

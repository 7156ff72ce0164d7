"""A private SLURM cluster for integration tests: tests/fixtures/slurm_cluster.sh in a temp dir.

    with SlurmCluster() as cluster:          # always torn down, even on exceptions
        code, out, err = cluster.run(["srun", "-N3", "hostname"], timeout=30)

cluster.sh runs munged (own key and socket), slurmctld and three slurmd virtual
nodes n1..n3 (4 fake GPUs each) inside a private mount namespace whose
/etc/hosts maps n1..n3 to 127.0.0.1. Clients started through run()/start() enter
that namespace (nsenter into the namespace holder) with SLURM_CONF set, and are
registered with harness.start, so each is killed by PID when the test ends.
cancel_all() cancels every job and waits until the nodes are idle again; tests
call it in between so one test's leftover job cannot starve the next. If this
process dies without unwinding (SIGKILL), cluster.sh's watchdog (it is told our
pid) brings the cluster down within a second.

SlurmCluster(netns=True) is `cluster.sh up DIR --netns`: every node is a host
of its own (network namespace, address in a private /24, hostname = node
name); node_addrs maps n1..n3 to their addresses (127.0.0.1 each without
netns). Tests marked @slurm_test(netns=True) run on such a cluster, started
on first use and torn down with the other one.

skip_reason() says why the cluster cannot run here (not root, SLURM or munge
not installed); run_slurm_tests() then reports every test as skipped and the
script exits 77 (ctest: Skipped).
"""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import harness
from harness import SOURCE_DIR, Skip, base_env, check, run_tests, start, test, wait_for


CLUSTER_SH = os.path.join(SOURCE_DIR, "tests", "fixtures", "slurm_cluster.sh")
SLURM_DIR = os.path.join(SOURCE_DIR, "scripts", "slurm")
NODES = ["n1", "n2", "n3"]
TOOLS = ["slurmctld", "slurmd", "munged", "munge", "srun", "sbatch", "squeue", "scancel", "sinfo",
         "unshare", "nsenter", "mknod"]
NETNS_TOOLS = ["ip", "hostname"]


def which(tool):
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin")


def skip_reason(netns=False):
    """None when a cluster (with netns=True: a multi-host one) can run here, else why not."""
    if os.geteuid() != 0:
        return "needs root (mount namespace, mknod, SLURM daemons run as root)"
    missing = [t for t in TOOLS if which(t) is None]
    if missing:
        return f"not installed: {' '.join(missing)} (apt-get install slurm-wlm munge)"
    if netns:
        missing = [t for t in NETNS_TOOLS if which(t) is None]
        if missing:
            return f"not installed: {' '.join(missing)} (apt-get install iproute2 hostname)"
    return None


class SlurmCluster:
    """Brings the cluster up in a fresh temp dir; __exit__ always runs `cluster.sh down`."""

    def __init__(self, up_timeout=60, netns=False):
        self.up_timeout = up_timeout
        self.netns = netns
        self.dir = None
        self.holder = None
        self.up_seconds = None
        self.node_addrs = {}  # node name -> the address its name resolves to in the cluster

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="muster-slurm-netns-" if self.netns else "muster-slurm-")
        try:
            started = time.monotonic()
            try:
                # The watchdog of cluster.sh runs `down` if this process dies
                # without reaching __exit__ (SIGKILL, a ctest timeout).
                env = dict(os.environ, SLURM_CLUSTER_OWNER=str(os.getpid()))
                up = [CLUSTER_SH, "up", self.dir] + (["--netns"] if self.netns else [])
                res = subprocess.run(up, capture_output=True, text=True, timeout=self.up_timeout,
                                     env=env)
            except subprocess.TimeoutExpired as e:
                raise AssertionError(f"cluster.sh up did not finish in {self.up_timeout}s\n"
                                     f"{e.stdout}\n{e.stderr}") from e
            self.up_seconds = time.monotonic() - started
            check(res.returncode == 0, f"cluster.sh up failed ({res.returncode})", res.stdout,
                  res.stderr)
            with open(os.path.join(self.dir, "run", "ns.pid")) as f:
                self.holder = int(f.read().strip())
            self.node_addrs = self._read_node_addrs()
        except BaseException:
            try:
                self.__exit__(None, None, None)  # down, and the dir unless it is to be kept
            except AssertionError as teardown:  # reported, but the failure of up comes first
                print(teardown, file=sys.stderr, flush=True)
            raise
        return self

    def _read_node_addrs(self):
        """{node: address} from the cluster's hosts file (its first lines name the nodes)."""
        addrs = {}
        with open(os.path.join(self.dir, "hosts")) as f:
            for line in f:
                fields = line.split()
                for name in fields[1:]:
                    if name in NODES and name not in addrs:
                        addrs[name] = fields[0]
        check(sorted(addrs) == NODES, f"the hosts file of {self.dir} names the nodes {sorted(addrs)}")
        return addrs

    def __exit__(self, *exc):
        failure = self.down()
        if self.dir and not os.environ.get("MUSTER_KEEP_SLURM_DIR"):
            shutil.rmtree(self.dir, ignore_errors=True)
        # A teardown that leaves processes, namespaces or links behind fails
        # the script, whatever the tests did.
        check(failure is None, failure or "")
        return False

    def down(self):
        """Runs `cluster.sh down`; None when it cleaned up everything, else why not."""
        if not self.dir:
            return None
        try:
            res = subprocess.run([CLUSTER_SH, "down", self.dir], capture_output=True, text=True,
                                 timeout=60)
        except subprocess.TimeoutExpired:
            return "cluster.sh down did not finish in 60s"
        if res.returncode != 0:
            return f"cluster.sh down failed ({res.returncode}):\n{res.stdout}{res.stderr}"
        return None

    @property
    def conf(self):
        return os.path.join(self.dir, "slurm.conf")

    def env(self, **extra):
        """harness.base_env() without any SLURM_* of our own, plus SLURM_CONF and `extra`."""
        env = base_env()
        for key in list(env):
            if key.startswith("SLURM_") or key in ("RANK", "WORLD_SIZE", "LOCAL_RANK",
                                                   "MASTER_ADDR", "MASTER_PORT"):
                del env[key]
        env["SLURM_CONF"] = self.conf
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def command(self, args, cwd=None):
        """`args` run inside the cluster's mount namespace, in `cwd` (default: ours)."""
        return ["nsenter", "--mount", "--target", str(self.holder), f"--wd={cwd or os.getcwd()}",
                "--"] + list(args)

    def start(self, args, env=None, cwd=None, log=None):
        """Starts a client (srun, sbatch, ...) in the namespace; killed when the test ends.

        Its stdout and stderr are pipes, or both go to the file `log` (for a
        long-running client whose output nobody reads until it ends).
        """
        if log is None:
            return start(self.command(args, cwd), env=env or self.env())
        with open(log, "w") as out:
            return start(self.command(args, cwd), env=env or self.env(), stdout=out,
                         stderr=subprocess.STDOUT)

    def run(self, args, timeout, env=None, cwd=None):
        """Runs a client to completion; returns (exit code, stdout, stderr)."""
        try:
            return harness.run(self.command(args, cwd), env=env or self.env(), timeout=timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.log_tail('slurmctld')}") from None

    def query(self, args, timeout=15):
        """stdout of a quick query (squeue, sinfo, scontrol); fails on a non-zero exit."""
        res = subprocess.run(self.command(args), env=self.env(), capture_output=True, text=True,
                             timeout=timeout)
        check(res.returncode == 0, f"{' '.join(args)} exited {res.returncode}", res.stdout,
              res.stderr)
        return res.stdout

    def jobs(self):
        """{job id: state} of the jobs slurmctld still lists."""
        jobs = {}
        for line in self.query(["squeue", "-h", "-o", "%i %T"]).splitlines():
            job, state = line.split()
            jobs[job] = state
        return jobs

    def wait_job_state(self, job, states, timeout=20):
        check(wait_for(lambda: self.jobs().get(job) in states, timeout, interval=0.1),
              f"job {job} not in {states} after {timeout}s: {self.jobs()}")

    def nodes_idle(self):
        lines = self.query(["sinfo", "-h", "-N", "-o", "%N %t"]).split("\n")
        return sum(1 for line in lines if line.split()[1:] == ["idle"]) == len(NODES)

    def cancel_all(self, timeout=30):
        """Cancels every job (all their steps and tasks) and waits until the nodes are idle."""
        jobs = self.jobs()
        if jobs:
            subprocess.run(self.command(["scancel", "--full", "--quiet"] + list(jobs)),
                           env=self.env(), capture_output=True, timeout=15)
        check(wait_for(lambda: not self.jobs() and self.nodes_idle(), timeout, interval=0.2),
              f"jobs or busy nodes left {timeout}s after scancel: {self.jobs()}\n"
              + self.query(["sinfo", "-N"]))

    def log_tail(self, name, lines=20):
        path = os.path.join(self.dir, "log", f"{name}.log")
        try:
            with open(path) as f:
                return f"--- last lines of {path}:\n" + "".join(f.readlines()[-lines:])
        except OSError:
            return ""


_cluster = None
_netns_cluster = None
_stack = None  # run_slurm_tests' ExitStack: the multi-host cluster, started lazily, goes down with it
_netns_failure = None  # why `up --netns` failed, once it has


def cluster(netns=False):
    """A cluster of run_slurm_tests(); raises Skip when it could not run here.

    netns=True: the multi-host cluster, brought up on the first call; if that
    fails, every test asking for it fails with the same message.
    """
    global _netns_cluster, _netns_failure
    if not netns:
        if _cluster is None:
            raise Skip(skip_reason() or "no cluster")
        return _cluster
    if _netns_cluster is None:
        if _stack is None or skip_reason(netns=True):
            raise Skip(skip_reason(netns=True) or "no cluster")
        if _netns_failure:
            raise AssertionError(f"the multi-host cluster did not come up:\n{_netns_failure}")
        try:
            c = _stack.enter_context(SlurmCluster(netns=True))
        except Exception as e:
            _netns_failure = str(e)
            raise
        _netns_cluster = c
        print(f"  multi-host cluster up in {c.up_seconds:.2f}s ({c.dir}): "
              + " ".join(f"{n}={a}" for n, a in sorted(c.node_addrs.items())), flush=True)
    return _netns_cluster


def slurm_test(fn=None, *, netns=False):
    """Like harness.test; afterwards every job of the shared cluster is cancelled.

    @slurm_test runs the test on the single-address cluster,
    @slurm_test(netns=True) on the multi-host one (cluster.sh up --netns).
    """

    def decorate(fn):
        def wrapper():
            c = cluster(netns)
            try:
                fn(c)
            finally:
                c.cancel_all()

        wrapper.__name__ = fn.__name__
        wrapper.__doc__ = fn.__doc__
        return test(wrapper)

    return decorate(fn) if fn is not None else decorate


def run_slurm_tests():
    """One cluster for all tests of the script (up takes ~0.5 s), and the
    multi-host one from the first test that asks for it; down however they end."""
    global _cluster, _netns_cluster, _stack
    reason = skip_reason()
    if reason:
        print(f"skipping every SLURM test: {reason}", flush=True)
        run_tests()  # each test raises Skip: exits 77
    # SIGTERM/SIGHUP unwind through the with statement (clusters down, dirs removed).
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    with contextlib.ExitStack() as stack:
        c = stack.enter_context(SlurmCluster())
        print(f"cluster up in {c.up_seconds:.2f}s ({c.dir})", flush=True)
        _cluster, _stack = c, stack
        try:
            run_tests()  # sys.exit: the with statement still tears the clusters down
        finally:
            _cluster = _netns_cluster = _stack = None

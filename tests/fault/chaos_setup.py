"""A chaos run's set-up: hosts, fault kinds, the checkpoint directory, the daemon or
replicas, the agents, and the fault-free reference run.
"""
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_checks  # noqa: E402
import chaos_cluster as cluster  # noqa: E402
import chaos_replicas  # noqa: E402
import chaos_torch  # noqa: E402
from chaos_checks import InvariantError  # noqa: E402
from chaos_common import (ALL_KINDS, MUSTER, MUSTERD, RDZV_CONF, RUN_ID, TRAIN,
                          WRAPPER)  # noqa: E402
from testlib.ports import bound_port  # noqa: E402


class Setup:
    """Sets the run up: hosts, fault kinds, checkpoint directory, rendezvous, agents.
    A part of chaos.Chaos: its methods share the run's state on self."""

    def say(self, text):
        stamp = f"{time.time() - self.t0:7.2f}s " if self.t0 else "         "
        print(f"chaos: {stamp}{text}", flush=True)

    def choose_mode(self):
        if self.args.loopback:
            self.say("loopback mode (--loopback): every agent on 127.0.0.1")
            self.hosts = cluster.LoopbackHosts(self.n)
        elif not self.root:
            self.say(f"not root (uid {os.geteuid()}): network namespaces need root, so every agent "
                     "runs on 127.0.0.1 (loopback fallback)")
            self.hosts = cluster.LoopbackHosts(self.n)
        else:
            removed = cluster.remove_stale_namespaces()
            if removed:
                self.say(f"removed namespaces of dead earlier runs: {removed}")
            # Replica j runs on host n + j (a link of its own for leader_cut).
            self.hosts = cluster.NetnsHosts(self.n + (self.args.replicas
                                                      if self.args.replicas > 1 else 0))
            self.hosts.up(self.registry)
            where = (f"etcd at {self.hosts.daemon_addr}, replicas on hosts "
                     f"{self.n + 1}..{self.n + self.args.replicas}" if self.args.replicas > 1
                     else f"daemon at {self.hosts.daemon_addr}")
            self.say(f"network namespaces {self.hosts.namespaces()} on bridge "
                     f"{self.hosts.prefix}-br, {where}")
        kinds = [k for k in (self.args.faults.split(",") if self.args.faults else ALL_KINDS) if k]
        for k in kinds:
            if k not in ALL_KINDS:
                raise SystemExit(f"chaos: unknown fault kind '{k}' (known: {', '.join(ALL_KINDS)})")
        why_not = {}
        if not self.hosts.netns:
            reason = ("needs network namespaces (root, not --loopback)" if self.root
                      else f"needs root for network namespaces (uid {os.geteuid()})")
            why_not["link_down"] = why_not["partition"] = reason
        elif cluster.nft_path() is None:
            why_not["partition"] = "nft not found (apt-get install nftables)"
        if not self.root:
            why_not["disk_full"] = f"needs root to mount a tmpfs (uid {os.geteuid()})"
        if self.n < 2:
            why_not["agent_kill"] = "needs 2 or more hosts (the only agent is the master)"
        if self.torch:
            why_not.update(chaos_torch.NOT_APPLICABLE)
        if self.args.replicas < 2:
            why_not["leader_kill"] = why_not["leader_cut"] = (
                f"needs --replicas 2 or more (--replicas {self.args.replicas})")
        elif not self.hosts.netns:
            why_not["leader_cut"] = ("needs network namespaces (root, not --loopback)" if self.root
                                     else f"needs root for network namespaces "
                                     f"(uid {os.geteuid()})")
        self.kinds = [k for k in kinds if k not in why_not]
        for k in kinds:
            if k in why_not:
                self.skipped[k] = why_not[k]
                self.say(f"SKIP fault {k}: {why_not[k]}")

    def prepare_checkpoint_dir(self):
        if self.root and "disk_full" in self.kinds:
            mount = os.path.join(self.out_dir, "ckptfs")
            os.makedirs(mount, exist_ok=True)
            self.registry.add("mount", mount)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "chaos-ckpt", mount],
                           check=True, capture_output=True, timeout=30)
            self.ckpt_mount = mount
            self.ckpt_dir = os.path.join(mount, "ckpt")
            self.filler = os.path.join(mount, "filler")
        else:
            self.ckpt_dir = os.path.join(self.out_dir, "ckpt")
        os.makedirs(self.ckpt_dir, exist_ok=True)

    def train_args(self, steps, sleep_ms, ckpt_dir, out):
        # The global batch is a multiple of every world size MIN..MAX x nproc, and the
        # dataset a multiple of the batch, so every generation splits the same samples.
        lcm = 1
        for k in range(self.min_nodes, self.max_nodes + 1):
            lcm = lcm * (k * self.nproc) // math.gcd(lcm, k * self.nproc)
        batch = lcm * max(1, -(-48 // lcm))
        return ["--backend", "gloo", "--hidden", "64", "--depth", "2", "--features", "32",
                "--global-batch", str(batch), "--dataset-size", str(batch * 85),
                "--bucket-mb", "0.004", "--steps", str(steps), "--log-every", "1",
                "--checkpoint-dir", ckpt_dir, "--checkpoint-every", str(self.interval),
                "--collective-timeout", "30", "--step-sleep-ms", str(sleep_ms), "--out", out]

    def run_reference(self):
        """The fault-free run: one host, same model and flags, no step sleep."""
        out = os.path.join(self.out_dir, "reference.bin")
        args = [MUSTER, "--standalone", "--nproc-per-node", str(self.nproc), "--no-python", TRAIN]
        args += self.train_args(self.steps_total, 0, os.path.join(self.out_dir, "ref-ckpt"), out)
        started = time.monotonic()
        proc = cluster.Proc(args, "reference", self.log, self.registry, env=self.env())
        code = proc.wait(120)
        if code is None:
            proc.kill(group=True)
            raise InvariantError("the fault-free reference run finishes",
                                 f"still running after 120 s:\n{self.log.tail('reference')}")
        if code != 0 or not os.path.exists(out):
            raise InvariantError("the fault-free reference run finishes",
                                 f"exit {code}:\n{self.log.tail('reference')}")
        self.say(f"fault-free reference: {self.steps_total} steps on one host ({self.nproc} "
                 f"workers, no step sleep) in "
                 f"{time.monotonic() - started:.1f}s")
        return chaos_checks.read_floats(out)

    def env(self, **extra):
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("PET_") or key in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"):
                del env[key]
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def start_daemon(self, port=0):
        k = len(self.daemons)
        args = self.hosts.wrap("daemon", [MUSTERD, "--host", self.hosts.daemon_addr,
                                          "--port", str(port), "--rdzv-conf", RDZV_CONF])
        proc = cluster.Proc(args, f"musterd-{k}", self.log, self.registry, env=self.env())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for _, source, stream, text in self.log.since():
                port = bound_port(text)
                if source == proc.name and stream == "out" and port is not None:
                    self.port = port
                    self.daemon = proc
                    self.daemons.append(proc)
                    return proc
            if not proc.alive():
                break
            time.sleep(0.01)
        raise InvariantError("musterd starts", f"no 'listening on' line (exit {proc.popen.poll()}):"
                             f"\n{self.log.tail(proc.name)}")

    def start_replicas(self):
        """etcd and --replicas musterd replicas; returns once one leads (chaos_replicas.py)."""
        self.replicas = chaos_replicas.Replicas(self.args.replicas, self.hosts, self.n + 1,
                                                self.out_dir, self.log, self.registry,
                                                self.env, RDZV_CONF)
        self.replicas.start()
        lead = self.replicas.leader()
        self.say(f"{self.args.replicas} musterd replicas at {self.replicas.endpoints()} on etcd "
                 f"{self.replicas.etcd_addr}:{self.replicas.etcd_ports[0]}; {lead.address} leads")

    def rdzv_endpoint(self):
        """The agents' --rdzv-endpoint: the daemon, or every replica."""
        if self.replicas:
            return self.replicas.endpoints()
        return f"{self.hosts.daemon_addr}:{self.port}"

    def leader_endpoint(self):
        """(address, port) of the daemon that serves now (with replicas: the leader's)."""
        if self.replicas:
            lead = self.replicas.leader()
            if lead:
                return lead.addr, lead.port
        return self.hosts.daemon_addr, self.port

    def rendezvous_procs(self):
        """The rendezvous' processes that must stay up: musterd, or etcd and the replicas."""
        if self.replicas:
            return self.replicas.procs()
        return [self.daemon] if self.daemon else []

    def start_agent(self, i):
        k = self.incarnation.get(i, 0)
        self.incarnation[i] = k + 1
        args = [MUSTER, "--nnodes", f"{self.min_nodes}:{self.max_nodes}",
                "--nproc-per-node", str(self.nproc), "--rdzv-backend", "c10d",
                "--rdzv-endpoint", self.rdzv_endpoint(), "--rdzv-id", RUN_ID,
                "--rdzv-conf", RDZV_CONF, "--max-restarts", "1000",
                "--local-addr", self.hosts.host_addr(i), "--hang-timeout", self.args.hang_timeout,
                "--shutdown-timeout", "3", "--recovery", self.args.recovery]
        if self.torch:
            args += ["--python", chaos_torch.PYTHON]
            args += chaos_torch.worker_command(self.records, self.steps_total, self.step_log.path,
                                               self.step_sleep_s)
            # Gloo binds where the hostname resolves (loopback here) unless told.
            # Its in-place records come from the agents' info lines (as under ctest).
            env = self.env(CHAOS_HOST=i, GLOO_SOCKET_IFNAME=self.hosts.interface(i),
                           MUSTER_LOG_LEVEL=os.environ.get("MUSTER_LOG_LEVEL", "info"),
                           **chaos_torch.env_vars())
        else:
            args += ["--no-python", WRAPPER, self.records, TRAIN]
            args += self.train_args(self.steps_total, self.args.step_sleep_ms, self.ckpt_dir,
                                    self.final_out)
            env = self.env(CHAOS_HOST=i)
        proc = cluster.Proc(self.hosts.wrap(i, args), f"agent-h{i}-{k}", self.log, self.registry,
                            env=env)
        proc.host = i
        self.agents[i] = proc
        self.all_agents.append(proc)
        return proc


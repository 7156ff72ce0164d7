"""What the parts of a chaos run (chaos.py) share: binaries, fault kinds, the log lines
read, the timeouts, and a Fault's record."""
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_cluster as cluster  # noqa: E402

MUSTER = os.path.join(cluster.BIN_DIR, "muster")
MUSTERD = os.path.join(cluster.BIN_DIR, "musterd")
TRAIN = os.path.join(cluster.BIN_DIR, "muster-train")
WRAPPER = os.path.join(cluster.HERE, "chaos_worker.py")
FLOOD = os.path.join(cluster.HERE, "chaos_flood.py")
RUN_ID = "chaos"
OPEN_ENDED_STEPS = 1000000  # --steps until the wind-down fixes the real length
# Given to the daemon too: a run's round timing is the daemon's (the default
# last_call_timeout of 2 s would hold a replacement node back that long).
RDZV_CONF = "last_call_timeout=0.5"

ALL_KINDS = ["worker_kill", "worker_hang", "agent_kill", "master_kill", "daemon_kill",
             "link_down", "partition", "ckpt_kill", "disk_full", "flood", "leader_kill",
             "leader_cut"]
# The leader's own faults (--replicas 2+); after them, as after a standby's
# daemon_kill, no membership changed and no worker may restart.
REPLICA_KINDS = ("leader_kill", "leader_cut")

STEP_RE = re.compile(r"^\[rank0\]:\s*step=(\d+) ")
RESUMED_RE = re.compile(r"^\[rank0\]:\s*(?:resumed from|recovered in place at) step (\d+) ")
# --recovery in-place: a worker moved into a generation without starting again.
REJOIN_RE = re.compile(r"event=in_place_rejoin gen=(\d+) rank=(\d+) local_rank=\d+ "
                       r"world_size=(\d+) group_rank=(\d+) group_world_size=(\d+) "
                       r"master=(\S+) pid=(\d+)")
SILENT_RE = re.compile(r"event=node_dead node=[^:\s]+:(\d+):\S+ .*why=silent")
GEN_RE = re.compile(r"event=generation gen=(\d+) group_rank=(\d+) .*world_size=(\d+)")

HANG_TIMEOUT = 3.0
RECOVERY_TIMEOUT = 25.0
# With --hang-timeout auto a stopped worker is suspected after 20 s at least
# (max(20 s, 20 x its step, 2 x its longest step): launcher/process/hang_judge.h)
# and judged over a 1 s window: a worker_hang's recovery bound grows by this.
AUTO_HANG_EXTRA_S = 30.0
RESTORE_TIMEOUT = 30.0
# musterd's default failover_timeout (rendezvous/state/settings.h): a new leader
# rebuilds the run by then, and an agent left without one fences after it.
FAILOVER_TIMEOUT = 3.5


def percentile(values, q):
    """Nearest-rank percentile of a non-empty list."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))]


class Fault:
    def __init__(self, kind, target):
        self.kind = kind
        self.target = target  # words: which host/rank/pid
        self.host = None  # the host a link_down/partition cut off
        self.replica = None  # the replica process (its log name) a replica fault hit
        self.t = None  # injected (wall clock)
        self.detected = None
        self.detect_line = ""
        self.recovered = None
        self.restored = None
        self.notes = []
        self.redone = 0



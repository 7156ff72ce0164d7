#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets: tests/fuzz/corpus/<target>/.

The seeds are committed; run this again only to change them (it replaces
every file it owns, named seed-*, and leaves any other file alone). Each
seed is a valid input, or a near miss the decoder must refuse, in the input
layout its target's header comment describes. The checkpoint seeds follow
checkpoint.h's format byte for byte; fuzz_checkpoint asserts that what the
decoder accepts re-encodes to the same bytes, so they are what
EncodeCheckpoint writes.

Usage: tests/fuzz/make_seeds.py
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from store_wire import i64, s, u32, u64  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, seeds):
    """seeds: list of (name, bytes)."""
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        if old.startswith("seed-"):
            os.remove(os.path.join(folder, old))
    for name, data in seeds:
        with open(os.path.join(folder, "seed-" + name), "wb") as f:
            f.write(data)


# --- rendezvous frames and messages (rendezvous/PROTOCOL.md) -----------------

def payload(fields):
    # As message_codec.cc's Encode writes them: nlohmann::json objects keep
    # their keys sorted, and dump(-1) adds no spaces.
    return json.dumps(fields, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def frame(type_byte, body):
    return struct.pack("<I", len(body) + 1) + bytes([type_byte]) + body


ASSIGNMENT = {"run_id": "job1", "generation": 3, "group_rank": 1, "group_world_size": 4,
              "local_world_size": 8, "global_rank_offset": 8, "world_size": 32,
              "master_addr": "node0", "master_port": 29500, "restart_count": 1,
              "max_restarts": 3}

MESSAGES = [
    ("hello", 0x01, {"protocol_version": 2, "token": "s3cret", "agent_id": "node1:4242:9f3a"}),
    ("join", 0x02, {"run_id": "job1", "node_id": "node1", "host": "node1", "local_world_size": 8,
                    "min_nodes": 1, "max_nodes": 4, "max_restarts": 3, "store_addr": "10.0.0.1",
                    "store_port": 29501}),
    ("join-current", 0x02, {"run_id": "job1", "node_id": "node1", "host": "node1",
                            "local_world_size": 8, "min_nodes": 1, "max_nodes": 4,
                            "max_restarts": 3, "store_addr": "10.0.0.1", "store_port": 29501,
                            "current": ASSIGNMENT}),
    ("join-null-current", 0x02, {"run_id": "j", "node_id": "n", "host": "h",
                                 "local_world_size": 1, "min_nodes": 1, "max_nodes": 1,
                                 "max_restarts": 0, "store_addr": "", "store_port": 0,
                                 "current": None, "unknown_field": [1, {"x": None}]}),
    ("heartbeat", 0x03, {"run_id": "job1", "node_id": "node1", "generation": 3}),
    ("heartbeat-step", 0x03, {"run_id": "job1", "node_id": "node1", "generation": 3,
                              "step": 1200}),
    ("heartbeat-escaped", 0x03, {"run_id": "j\u00e9b\"1", "node_id": "n\\1", "generation": 0}),
    ("worker-failed", 0x04, {"run_id": "job1", "node_id": "node1", "generation": 3,
                             "exit_code": -9, "message": "local rank 2 killed by SIGKILL"}),
    ("workers-succeeded", 0x05, {"run_id": "job1", "node_id": "node1", "generation": 3}),
    ("leave", 0x06, {"run_id": "job1", "node_id": "node1"}),
    ("status-request", 0x07, {"run_id": ""}),
    ("welcome", 0x81, {"protocol_version": 2, "daemon_id": "musterd-7f3a",
                       "keep_alive_interval_ms": 500, "heartbeat_timeout_ms": 1250,
                       "fence_timeout_ms": 1000, "failover_timeout_ms": 3500}),
    ("error", 0x82, {"code": "stale_generation", "message": "generation 2 is not 3",
                     "fatal": False}),
    ("waiting", 0x83, {"run_id": "job1", "reason": "2 of min 4 nodes joined"}),
    ("assignment", 0x84, {"assignment": ASSIGNMENT}),
    ("heartbeat-ack", 0x85, {"run_id": "job1", "generation": 3}),
    ("run-ended", 0x86, {"run_id": "job1", "succeeded": True, "message": ""}),
    ("status-reply", 0x87, {"json": json.dumps({"runs": [{"id": "job1", "nodes": 4}]})}),
]


def message_seeds():
    seeds = [(name, bytes([t]) + payload(fields)) for name, t, fields in MESSAGES]
    # The fast path's exact form, and near misses of the strict decoder.
    seeds += [
        ("heartbeat-plain", b"\x03" + b'{"generation":18446744073709551615,"node_id":"n",'
                                      b'"run_id":"r"}'),
        ("heartbeat-float", b"\x03" + b'{"generation":1.0,"node_id":"n","run_id":"r"}'),
        ("heartbeat-plain-step", b"\x03" + b'{"generation":7,"node_id":"n","run_id":"r",'
                                           b'"step":18446744073709551615}'),
        ("heartbeat-step-zero", b"\x03" + b'{"generation":7,"node_id":"n","run_id":"r","step":0}'),
        ("heartbeat-step-negative", b"\x03" + b'{"generation":7,"node_id":"n","run_id":"r",'
                                              b'"step":-3}'),
        ("join-negative", b"\x02" + payload({**MESSAGES[1][2], "local_world_size": -3})),
        ("deep", b"\x03" + b"[" * 20 + b"]" * 20),
        ("not-json", b"\x01" + b"\xff\xfe{"),
        ("unknown-type", b"\x00{}"),
    ]
    return seeds


def frame_seeds():
    # Byte 0 picks max_frame_bytes: 0:1 1:2 2:5 3:16 4:300 5:1 MiB; byte 1
    # seeds the chunking (0: whole).
    hello = frame(0x01, payload(MESSAGES[0][2]))
    hb = frame(0x03, payload(MESSAGES[4][2]))
    return [
        ("one-frame", b"\x05\x00" + hello),
        ("three-frames-chunked", b"\x05\x07" + hello + hb + hb),
        ("partial", b"\x05\x03" + hello + hb[:9]),
        ("type-only", b"\x00\x01" + frame(0x03, b"") * 3),
        ("small-max-oversized", b"\x03\x02" + frame(0x03, b"0123456789") + frame(0x03, b"x" * 40)),
        ("empty-frame", b"\x04\x00" + hb + b"\x00\x00\x00\x00" + hb),
        ("huge-length", b"\x05\x05" + b"\xff\xff\xff\xff\x03"),
        ("max-300", b"\x04\x09" + frame(0x87, b"y" * 299) + frame(0x87, b"z" * 300)),
    ]


# --- TCPStore requests (store/tcpstore_protocol.h) ---------------------------

def keys(*ks):
    return u64(len(ks)) + b"".join(s(k) for k in ks)


# Request bodies by operation (the query byte differs per dialect).
BODIES = {
    "SET": s(b"/rank0/addr") + s(b"10.0.0.1:4242"),
    "COMPARE_SET": s(b"counter") + s(b"") + s(b"1"),
    "GET": s(b"/rank0/addr"),
    "ADD": s(b"init/") + i64(1),
    "ADD_NEGATIVE": s(b"init/") + i64(-5),
    "CHECK": keys(b"a", b"b"),
    "WAIT": keys(b"store_based_barrier_key:1"),
    "WAIT_NONE": keys(),
    "GETNUMKEYS": b"",
    "WATCH_KEY": s(b"w"),
    "DELETE_KEY": s(b"/rank0/addr"),
    "APPEND": s(b"log") + s(b"line\n"),
    "MULTI_GET": keys(b"a", b"b", b"c"),
    "MULTI_SET": u64(2) + s(b"a") + s(b"1") + s(b"b") + s(b"2"),
    "CANCEL_WAIT": b"",
    "PING": u32(0xDEADBEEF),
    "QUEUE_PUSH": s(b"q") + s(b"item"),
    "QUEUE_POP": s(b"q"),
    "QUEUE_LEN": s(b"q"),
    "LIST_KEYS": b"",
    "BARRIER": s(b"barrier/1") + i64(4),
}

LEGACY = ["SET", "COMPARE_SET", "GET", "ADD", "CHECK", "WAIT", "GETNUMKEYS", "WATCH_KEY",
          "DELETE_KEY"]
TORCH21 = ["SET", "COMPARE_SET", "GET", "ADD", "CHECK", "WAIT", "GETNUMKEYS", "DELETE_KEY",
           "APPEND", "MULTI_GET", "MULTI_SET", "CANCEL_WAIT"]
MODERN = ["VALIDATE", "SET", "COMPARE_SET", "GET", "ADD", "CHECK", "WAIT", "GETNUMKEYS",
          "DELETE_KEY", "APPEND", "MULTI_GET", "MULTI_SET", "CANCEL_WAIT", "PING", "QUEUE_PUSH",
          "QUEUE_POP", "QUEUE_LEN", "LIST_KEYS", "BARRIER"]


def request(table, op, body_name=None):
    return bytes([table.index(op)]) + BODIES[body_name or op]


def store_seeds(table, skip=()):
    # Byte 0: bit 0 = WAITs never answered, bits 1..7 = chunking seed.
    ops = [op for op in table if op not in skip and op != "VALIDATE"]
    seeds = [(op.lower().replace("_", "-"), b"\x00" + request(table, op)) for op in ops]
    session = b"".join(request(table, op) for op in ops)
    seeds += [("session", b"\x00" + session), ("session-chunked", b"\x0e" + session),
              ("add-negative", b"\x00" + request(table, "ADD", "ADD_NEGATIVE")),
              ("wait-no-keys", b"\x01" + request(table, "WAIT", "WAIT_NONE")),
              ("partial", b"\x06" + request(table, "SET")[:-3]),
              ("too-many-keys", b"\x00" + bytes([table.index("CHECK")]) + u64(17)),
              ("key-too-long", b"\x00" + bytes([table.index("GET")]) + u64(1025)),
              ("unknown-query", b"\x00" + bytes([len(table)]))]
    return seeds


def legacy_seeds():
    # No opening: torch 1.13 or 2.1, told apart by dialect_rule.h.
    shared = LEGACY[:7]
    seeds = store_seeds(LEGACY, skip=("WATCH_KEY", "DELETE_KEY"))
    wait = request(LEGACY, "WAIT")
    seeds += [
        # After an unanswered WAIT (control bit 0), 7 and 8 are torch 1.13's.
        ("t113-watch-after-wait", b"\x01" + wait + request(LEGACY, "WATCH_KEY")),
        ("t113-delete-after-wait", b"\x01" + wait + request(LEGACY, "DELETE_KEY")),
        ("t113-cancel-after-wait", b"\x01" + wait + request(TORCH21, "CANCEL_WAIT")),
        # Query 8 with nothing after its key: DELETE_KEY (1.13); with a
        # value: APPEND (2.1).
        ("q8-delete-key", b"\x00" + request(LEGACY, "GETNUMKEYS") + request(LEGACY, "DELETE_KEY")),
        ("q8-append", b"\x00" + request(TORCH21, "APPEND") + request(TORCH21, "GET")),
        ("q8-long-key", b"\x00" + b"\x08" + s(b"k" * 600)),
        ("q7-ambiguous", b"\x00" + request(LEGACY, "WATCH_KEY")),
        ("t21-multi-get", b"\x00" + request(TORCH21, "MULTI_GET") + request(TORCH21, "DELETE_KEY")),
        ("t21-multi-set", b"\x02" + request(TORCH21, "MULTI_SET") + request(TORCH21, "APPEND")),
        ("t21-cancel-wait", b"\x00" + request(TORCH21, "CANCEL_WAIT")),
        ("modern-handshake", b"\x00" + b"\x00" + u32(0x3C85F7CE) + request(MODERN, "PING")),
        ("set-zero-not-magic", b"\x00" + request(LEGACY, "SET")),
        ("shared-session", b"\x00" + b"".join(request(LEGACY, op) for op in shared)),
    ]
    return seeds


def torch21_seeds():
    # The opening (CANCEL_WAIT) is the harness's.
    return store_seeds(TORCH21)


def modern_seeds():
    # The opening (VALIDATE + magic) is the harness's.
    seeds = store_seeds(MODERN)
    seeds.append(("validate-again", b"\x00" + b"\x00" + u32(0x3C85F7CE)))
    return seeds


# --- host lists, fault plans, command lines ----------------------------------

def host_list_seeds():
    # The cases of tests/unit/host_list_cases.txt, and a few it cannot hold.
    cases_file = os.path.join(os.path.dirname(ROOT), "..", "unit", "host_list_cases.txt")
    lists = []
    with open(cases_file, encoding="utf-8") as f:
        for line in f:
            if line.startswith("'"):
                lists.append(line[1:line.index("'", 1)])
    lists += ["n\t[1-2]", "a\x01b", "n[0-999999]", "x[0-18446744073709551615]",
              "x[18446744073709551616]", "[" * 3, "a" * 256]
    return [("%03d" % i, text.encode()) for i, text in enumerate(lists)]


FAULT_PLANS = [
    # docs/ and the man pages.
    "kill-worker,rank=1,step=200", "kill-worker,rank=1,step=20",
    "drop-heartbeats:5s,node=1,after=10m",
    # tests/unit/fault_spec_test.cc, accepted and refused.
    "corrupt-checkpoint,step=4", "crash-daemon,after=3s", "delay-heartbeats:300ms,for=10s,after=0",
    "drop-heartbeats:5s,node=any,step=10", "exit-worker:7,rank=1,step=5",
    "hang-worker,rank=any,after=250ms", "kill-agent,node=2,after=1.5m", "kill-agent:TERM,after=2",
    "kill-worker:SIGTERM,rank=3,step=20", "kill-worker:USR1,rank=0,after=1s",
    "kill-worker:9,rank=0,after=1s",
    "kill-worker,rank=any,step=10..1000;hang-worker,rank=0,after=1s..100s;",
    "kill-worker,rank=0,step=3;crash-daemon,after=1s",
    " kill-worker , rank=0 , step=3 ; ; exit-worker,rank=2,step=1..18446744073709551615",
    "kill-worker,rank=0,step=9..3", "kill-worker,rank=0,after=-1s", "kill-worker,rank=0,after=5h",
    "exit-worker:256,rank=0,step=3", "drop-heartbeats:0s,after=1s",
    "kill-worker:SIGNOPE,rank=0,step=3", "kill-worker,rank=0,step=3,step=4",
    "kill-wrker,rank=0,step=3", "crash-daemon,node=0,after=1s", "",
]


# Every flag of launcher/cli/flag_table.cc once, with a value it takes.
FLAG_VALUES = [
    ("nnodes", "1:4"), ("nproc-per-node", "4"), ("slurm", "off"), ("node-rank", "0"),
    ("rdzv-backend", "muster"), ("rdzv-endpoint", "node0:29400"), ("rdzv-id", "job1"),
    ("rdzv-conf", "join_timeout=900,last_call_timeout=5"), ("standalone", None),
    ("master-addr", "node0"), ("master-port", "29500"), ("local-addr", "10.0.0.1"),
    ("max-restarts", "3"), ("monitor-interval", "0.5"), ("start-method", "spawn"),
    ("role", "trainer"), ("module", None), ("no-python", None), ("run-path", None),
    ("python", "python3"), ("shutdown-timeout", "30"), ("hang-timeout", "600"),
    ("inject", "kill-worker,rank=0,step=3"), ("inject-seed", "7"), ("log-dir", "logs"),
    ("redirects", "0:1,1:2"), ("tee", "3"), ("local-ranks-filter", "0,1"),
    ("duplicate-stdout-filters", "loss"), ("duplicate-stderr-filters", "error"),
    ("no-prefix", None), ("gpus", "0,1,2,3"), ("gpu-visibility", "isolate"),
    ("virtual-local-rank", None), ("event-log-handler", "null"), ("numa-binding", "node"),
    ("signals-to-handle", "SIGTERM,SIGINT"), ("logs-specs", "default"), ("config", "job.json"),
    ("dry-run", None), ("use-env", None), ("local-rank-arg", "local-rank"),
]

SLURM_ENV = ["SLURM_JOB_ID=4242", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=2",
             "SLURM_STEP_NUM_TASKS=2", "SLURM_NODEID=1", "SLURM_STEP_NODELIST=gpu[01-02]",
             "SLURM_STEP_GPUS=0,1"]


def argv(*tokens, env=()):
    # NUL-separated; a token starting with 0x01 is an environment variable.
    return b"\0".join([b"\x01" + e.encode() for e in env] + [t.encode() for t in tokens])


def cli_seeds():
    seeds = [
        ("minimal", argv("train.py")),
        ("nproc", argv("--nproc-per-node", "4", "train.py", "--lr", "0.1")),
        ("underscores", argv("--nproc_per_node=8", "--nnodes=2", "--node_rank=1",
                             "--master_addr=node0", "--master_port=29500", "train.py")),
        ("elastic", argv("--nnodes=1:4", "--rdzv-backend", "muster", "--rdzv-endpoint",
                         "node0:29400", "--rdzv-id", "job1", "--max-restarts=3", "train.py")),
        ("standalone", argv("--standalone", "--nproc-per-node=gpu", "-m", "pkg.train")),
        ("short", argv("-r3", "-t=1", "-m", "mod", "--", "--not-a-flag")),
        ("switch-value", argv("--standalone=false", "--no-python", "true", "./a")),
        ("negative", argv("--max-restarts", "-1", "t.py")),
        ("typo", argv("--nproc-per-nod", "4", "t.py")),
        ("missing-value", argv("--nnodes")),
        ("help", argv("--help")),
        ("version", argv("--version", "t.py")),
        ("config-missing", argv("--config", "job.json", "t.py")),
        ("config-dir", argv("--config=.", "t.py")),
        ("pet-env", argv("t.py", env=["PET_NPROC_PER_NODE=2", "PET_NNODES=1:2",
                                      "MUSTER_PYTHON=python3.11"])),
        ("inject-env", argv("t.py", env=["MUSTER_INJECT=kill-worker,rank=any,step=5",
                                         "MUSTER_INJECT_SEED=9"])),
        ("slurm", argv("train.py", env=SLURM_ENV)),
        ("slurm-static", argv("--master-addr", "gpu01", "train.py", env=SLURM_ENV)),
        ("slurm-off", argv("--slurm", "off", "train.py", env=SLURM_ENV)),
        ("launch-use-env", argv("--use-env", "--local-rank-arg", "local-rank", "train.py")),
    ]
    every = []
    for flag, value in FLAG_VALUES:
        every += ["--" + flag] + ([value] if value is not None else [])
    seeds.append(("every-flag", argv(*(every + ["train.py"]))))
    for flag, value in FLAG_VALUES:
        tokens = ["--" + flag.replace("-", "_")] + ([value] if value is not None else [])
        seeds.append(("flag-" + flag, argv(*(tokens + ["t.py"]))))
    return seeds


# --- checkpoints (worker_runtime/checkpoint/checkpoint.h) --------------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def checkpoint(step, epoch, position, metadata, tensors):
    body = u64(step) + u64(epoch) + u64(position) + s(metadata) + u64(len(tensors))
    for name, values in tensors:
        body += s(name.encode()) + u64(len(values)) + b"".join(struct.pack("<f", v) for v in values)
    length = 8 + 4 + 8 + len(body) + 4
    data = b"MSTRCKPT" + u32(1) + u64(length) + body
    return data + u32(crc32c(data))


def checkpoint_seeds():
    assert crc32c(b"123456789") == 0xE3069283
    full = checkpoint(1200, 3, 76800, json.dumps({"lr": 0.1, "batch": 32}).encode(),
                      [("layer0.weight", [0.5, -1.25, 3.0, 0.0]), ("layer0.bias", [0.125]),
                       ("", []), ("nan", [float("nan"), float("inf"), -0.0])])
    empty = checkpoint(0, 0, 0, b"", [])
    return [
        ("empty", empty),
        ("full", full),
        ("big-numbers", checkpoint(2**64 - 1, 2**63, 1, b"{}", [("w", [1.0] * 64)])),
        ("torn", full[:-10]),
        ("bad-crc", full[:-1] + bytes([full[-1] ^ 1])),
        ("bad-magic", b"MSTRCKPX" + empty[8:]),
        ("huge-count", empty[:52] + u64(2**62) + empty[60:]),
        ("version-2", empty[:8] + u32(2) + empty[12:]),
    ]


# --- the agent<->worker control channel (control/PROTOCOL.md) -----------------

def control_seeds():
    worker = ["hello 1 in-place", "hello 1", "hello 2 in-place resize", "ready 3", "joined 3",
              "failed 3 nccl abort timed out after 30 s", "42", "inject 0", "ready", "ready -1",
              "hello x", "joined 18446744073709551616"]
    agent = ["pause 3", "stop",
             "join 4 RANK=1 WORLD_SIZE=4 GROUP_RANK=0 LOCAL_RANK=1 MASTER_ADDR=10.0.0.1 "
             "MASTER_PORT=29500 STORE_PREFIX=/gen/4",
             "join 4 RANK=1 WORLD_SIZE=4", "pause", "stop now"]
    seeds = [("worker-%02d" % i, b"\x00" + line.encode()) for i, line in enumerate(worker)]
    seeds += [("agent-%02d" % i, b"\x01" + line.encode()) for i, line in enumerate(agent)]
    return seeds


def progress_seeds():
    reads = ["1\n", "1\n2\n3\n", "41\n42", "inject 0\n", "7\ninject 2\n8\n", "\n\n",
             "99999999999999999999\n", "-3\n", "inject -1\ninject x\n", "12 \n",
             "12 18000\n13 21000\n", "stacks 100\n1\n", "5 x\nstacks y\n"]
    return [("%02d" % i, r.encode()) for i, r in enumerate(reads)]


# --- etcd's JSON gateway and the run records (rendezvous/replica) ------------

ETCD_HEADER = ('"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952",'
               '"revision":"7","raft_term":"2"}')
ETCD_BODIES = [
    (0, "{" + ETCD_HEADER + ',"ID":"2324035601773309960","TTL":"10"}'),
    (1, '{"result":{"header":{"revision":"3"},"ID":"2324035601773309981","TTL":"10"}}'),
    (1, '{"result":{"header":{"revision":"3"},"ID":"4459023300198039047"}}'),
    (1, '{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader",'
        '"http_status":"Service Unavailable"}}'),
    (2, "{" + ETCD_HEADER + ',"succeeded":true,"responses":[{"response_put":'
        '{"header":{"revision":"7"}}}]}'),
    (2, "{" + ETCD_HEADER + ',"responses":[{"response_range":{"header":{"revision":"7"},'
        '"kvs":[{"key":"L3N2Yy9sZWFkZXI=","create_revision":"7","mod_revision":"7",'
        '"version":"1","value":"bm9kZS1hOjgwODA=","lease":"2324035601773310001"}],'
        '"count":"1"}}]}'),
    (3, "{" + ETCD_HEADER + ',"kvs":[{"key":"L2VsZWN0aW9uL2xlYWRlcg==","create_revision":"4",'
        '"mod_revision":"4","version":"1","value":"aHR0cDovLzEwLjAuMC4xOjgwODA=",'
        '"lease":"2324035601773309992"}],"count":"1"}'),
    (3, "{" + ETCD_HEADER + "}"),
    (4, "{" + ETCD_HEADER + ',"kvs":[{"key":"L20vcnVucy9qb2I=","create_revision":"2",'
        '"mod_revision":"2","version":"1","value":"eyJnIjoxfQ=="},{"key":"L20vcnVucy9qb2Iy",'
        '"create_revision":"3","mod_revision":"3","version":"1","value":"eA=="}],"count":"2"}'),
    (5, "{" + ETCD_HEADER + "}"),
    (5, '{"error":"etcdserver: requested lease not found","message":"etcdserver: requested '
        'lease not found","code":5}'),
    (6, "{" + ETCD_HEADER + ',"succeeded":true,"responses":[{"response_put":'
        '{"header":{"revision":"4"}}}]}'),
    (6, "{" + ETCD_HEADER + ',"succeeded":"yes"}'),
    (7, '{"error":"etcdserver: requested lease not found","message":"x","code":5}'),
    (8, "bm9kZS1hOjgwODA="),
    (8, "not base64!"),
]


def etcd_seeds():
    return [("%02d-%d" % (i, which), bytes([which]) + body.encode())
            for i, (which, body) in enumerate(ETCD_BODIES)]


def run_record_seeds():
    records = [
        '{"run_id":"job","generation":4,"restart_count":1,"max_restarts":3,'
        '"min_nodes":2,"max_nodes":3,"ended":false}',
        '{"run_id":"job2","generation":0,"restart_count":0,"max_restarts":0,'
        '"min_nodes":1,"max_nodes":1,"ended":true,"later_field":[1,2]}',
        '{"run_id":"job","generation":"4"}', '[]', '{}',
    ]
    return [("%02d" % i, r.encode()) for i, r in enumerate(records)]


# --- what `muster status` prints (launcher/report/status_table.h) -------------------

def status_seeds():
    node = {"node_id": "a:1:2", "host": "a", "state": "member", "connected": True,
            "local_world_size": 2, "heartbeat_age_ms": 120, "group_rank": 0,
            "global_ranks": [0, 1], "steps_per_second": 9.75, "straggler": False}
    waiting = {"node_id": "b:1:2", "host": "b", "state": "waiting", "connected": False,
               "local_world_size": 4, "heartbeat_age_ms": 1500}
    run = {"run_id": "job", "state": "running", "generation": 3, "min_nodes": 2,
           "max_nodes": 3, "restart_count": 1, "max_restarts": 2,
           "median_steps_per_second": 9.75, "stragglers": 0, "nodes": [node, waiting]}
    ended = dict(run, state="ended", result="failed",
                 message="node a:1:2 (host a) failed: exit code 1\n\x1b[2J", nodes=[])
    replica = {"self": "10.0.0.1:29400", "role": "leader", "epoch": 4,
               "leader": "10.0.0.1:29400", "standbys": ["10.0.0.2:29400"]}
    docs = [{"runs": [run]}, {"runs": []}, {"runs": [ended]},
            {"replica": replica, "runs": [run, ended]},
            {"runs": [dict(run, nodes=[dict(node, host=7)])]},
            {"runs": [dict(run, nodes=[dict(node, global_ranks=[0])])]}]
    seeds = [("%02d" % i, json.dumps(d, separators=(",", ":")).encode())
             for i, d in enumerate(docs)]
    seeds.append(("not-json", b'{"runs":[{"run_id":"j"'))
    return seeds


# --- the store's allowlist (store/peer_admission.h) --------------------------

CIDR_LISTS = ["10.0.0.0/8", "10.0.0.0/8,fd00::/64", "192.168.1.7", "::1", " 10.1.2.3/8 , ::/0 ",
              "0.0.0.0/0,::/0", "::ffff:10.0.0.1/128", "10.0.0.0/33", "fe80::1%eth0/64", "",
              ",", "10.0.0.0/", "10.0.0.0/-1", "host.example/8"]


def main():
    write("frame_codec", frame_seeds())
    write("message_codec", message_seeds())
    write("tcpstore_legacy", legacy_seeds())
    write("tcpstore_torch21", torch21_seeds())
    write("tcpstore_modern", modern_seeds())
    write("host_list", host_list_seeds())
    write("fault_spec", [("%03d" % i, p.encode()) for i, p in enumerate(FAULT_PLANS)])
    write("cli_argv", cli_seeds())
    write("checkpoint", checkpoint_seeds())
    write("control_message", control_seeds())
    write("progress_report", progress_seeds())
    write("etcd_json", etcd_seeds())
    write("run_record_json", run_record_seeds())
    write("status_table", status_seeds())
    write("cidr_list", [("%02d" % i, c.encode()) for i, c in enumerate(CIDR_LISTS)])
    return 0


if __name__ == "__main__":
    sys.exit(main())

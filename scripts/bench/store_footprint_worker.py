"""A worker that records what init_process_group writes to the worker store.

    muster ... store_footprint_worker.py OUT_DIR

Run under muster (or any agent that sets TORCHELASTIC_USE_AGENT_STORE), with
the default `env://` init, exactly as an ordinary script: the only change is
that the TCPStore client `torch.distributed.rendezvous._create_c10d_store`
builds is wrapped in a Store subclass that passes every call on and records,
per key, the length of the value the server holds after each set, add,
compare_set or append. The wrapper sits under every PrefixStore torch adds
(`/worker/attempt_N` on 1.13, `default_pg`, the backend's), so the keys it
sees are the keys the server stores. Keys the TCPStore client writes by itself
(on its own connection, not through the wrapper) are not seen: rank 0
compares with the server's own count (GETNUMKEYS) at the end, and with its
key list where torch has list_keys (2.10+). On the wire torch's client sends
"/" + key; the server keeps that byte too.

After init_process_group and a gloo barrier (no store traffic), each rank
writes OUT_DIR/rank_<RANK>.json: torch's version, the world size, and
{key: value_bytes} of what it wrote; rank 0 adds `server_num_keys` (and
`server_keys`, the server's list, on torch 2.10+).
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist


class RecordingStore(dist.Store):
    """Passes every call to `inner`; records the length of each value written."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.value_bytes = {}

    @staticmethod
    def _length(value):
        if isinstance(value, str):
            return len(value.encode())
        return len(bytes(value))

    def set(self, key, value):
        self.value_bytes[key] = self._length(value)
        return self.inner.set(key, value)

    def get(self, key):
        return self.inner.get(key)

    def add(self, key, amount):
        total = self.inner.add(key, amount)
        self.value_bytes[key] = len(str(total))  # servers keep decimal ASCII
        return total

    def compare_set(self, key, expected, desired):
        result = self.inner.compare_set(key, expected, desired)
        self.value_bytes[key] = self._length(result)
        return result

    def append(self, key, value):
        self.inner.append(key, value)
        self.value_bytes[key] = self.value_bytes.get(key, 0) + self._length(value)

    def multi_set(self, keys, values):
        for key, value in zip(keys, values):
            self.value_bytes[key] = self._length(value)
        return self.inner.multi_set(keys, values)

    def multi_get(self, keys):
        return self.inner.multi_get(keys)

    def wait(self, keys, timeout=None):
        if timeout is None:
            return self.inner.wait(keys)
        return self.inner.wait(keys, timeout)

    def check(self, keys):
        return self.inner.check(keys)

    def num_keys(self):
        return self.inner.num_keys()

    def delete_key(self, key):
        self.value_bytes.pop(key, None)
        return self.inner.delete_key(key)

    def set_timeout(self, timeout):
        return self.inner.set_timeout(timeout)


def _wrap_agent_store():
    """Makes _create_c10d_store's TCPStore come back wrapped; returns the list of wrappers."""
    module = sys.modules["torch.distributed.rendezvous"]
    real = module.TCPStore  # already the no-libuv subclass under chroot_python.sh
    made = []

    def recording_tcpstore(*args, **kwargs):
        store = RecordingStore(real(*args, **kwargs))
        made.append(store)
        return store

    module.TCPStore = recording_tcpstore
    return made


def main():
    out_dir = sys.argv[1]
    made = _wrap_agent_store()
    dist.init_process_group("gloo")
    dist.barrier()
    rank, world = dist.get_rank(), dist.get_world_size()
    if not made:
        sys.exit("store_footprint_worker: init_process_group did not build a TCPStore")
    record = {
        "torch": torch.__version__,
        "rank": rank,
        "world_size": world,
        "value_bytes": {k: v for s in made for k, v in s.value_bytes.items()},
    }
    if rank == 0:
        # Every rank has passed the gloo barrier, so every init write is done.
        time.sleep(0.5)
        record["server_num_keys"] = made[0].inner.num_keys()
        if hasattr(made[0].inner, "list_keys"):  # torch >= 2.10: the server's own list
            record["server_keys"] = made[0].inner.list_keys()
    with open(os.path.join(out_dir, f"rank_{rank}.json"), "w") as f:
        json.dump(record, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

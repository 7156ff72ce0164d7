"""The torch.distributed process group of one generation: formed on the
generation's store, interrupted from another thread when muster pauses the
worker, and destroyed without waiting on a dead or silent peer.

Contract:
- `form(membership)` initialises the default process group on the store
  muster hosts for that generation (TCPStore client, keys under the
  generation's STORE_PREFIX), as `rank` of `world_size`. `form_from_env()`
  is torchrun's env:// initialisation, for a worker that does not recover
  in place.
- `interrupt()` (any thread) makes every collective of the group that is
  blocked, or will block, fail at once:
    gloo: the group's connected TCP sockets (every one this process
          opened while the group formed; listeners stay) are shut down, so gloo's reads and
          writes on them fail ("Connection closed by peer");
    nccl: the group's communicators are aborted (ncclCommAbort through
          torch's abort), which fails their pending work. The abort runs on
          a thread of its own, once per group; when it has not returned
          within ABORT_TIMEOUT_S, interrupt raises AbortStuck (the process
          cannot go on: its GPU stream may wait for ever).
  A socket is shut down only while the descriptor still names the socket it
  named when the group formed (its inode), never a later reuse of the number.
- `destroy(interrupt)` destroys the default group, interrupting it first
  after a fault.

Thread-safety: form and destroy on the main thread; interrupt from any.
"""
import datetime
import os
import socket
import threading

import torch
import torch.distributed as dist


def _socket_inodes():
    """{fd: 'socket:[inode]'} for every socket descriptor of this process."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:"):
            found[int(name)] = target
    return found


def _shut_down_tcp(fd, inode):
    """Shuts down TCP socket `fd` in both directions if it still is `inode`."""
    try:
        if os.readlink(f"/proc/self/fd/{fd}") != inode:
            return False
        dup = socket.socket(fileno=os.dup(fd))  # family and type read from the descriptor
    except OSError:
        return False
    try:
        if dup.family not in (socket.AF_INET, socket.AF_INET6) or dup.type != socket.SOCK_STREAM:
            return False
        # A listening socket stays: gloo's listener (torch 2.x) aborts the
        # process when its accept fails.
        if dup.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            return False
        dup.shutdown(socket.SHUT_RDWR)
        return True
    except OSError:
        return False
    finally:
        dup.close()  # the duplicate only; the group closes its own


ABORT_TIMEOUT_S = 5.0


class AbortStuck(RuntimeError):
    """torch's NCCL abort did not return in time."""


def _abort_nccl():
    """Aborts the default group's NCCL communicators, on every torch that can."""
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_abort_process_group"):  # torch >= 2.6
        c10d._abort_process_group()
        return True
    group = c10d._get_default_group()
    if hasattr(group, "_get_backend"):  # torch 2.x: the backend object aborts
        backend = group._get_backend(torch.device("cuda"))
        if hasattr(backend, "abort"):
            backend.abort()
            return True
    if hasattr(group, "abort"):
        group.abort()
        return True
    return False  # torch 1.13: its NCCL watchdog's timeout is the bound


def _store_client(membership, timeout):
    """A client of the generation's store. It asks for no libuv where torch
    has the argument: a client needs none, and Debian's torch 2.x, built
    without it, refuses a TCPStore that asks for it (its default)."""
    args = (membership.master_addr, membership.master_port, membership.world_size, False, timeout)
    try:
        return dist.TCPStore(*args, use_libuv=False)
    except TypeError:  # torch < 2.3: no such argument, and no libuv
        return dist.TCPStore(*args)


class ProcessGroup:
    def __init__(self, backend: str, timeout: datetime.timedelta):
        self.backend = backend
        self.timeout = timeout
        self._lock = threading.Lock()
        self._before = None     # sockets open before the group formed
        self._sockets = None    # the group's, once formed
        self._formed = False
        self._abort = None      # (done event, result) of this group's NCCL abort

    def form(self, membership):
        store = _store_client(membership, self.timeout)
        prefixed = dist.PrefixStore(membership.store_prefix + "torch/", store)
        self._init(lambda: dist.init_process_group(
            self.backend, store=prefixed, rank=membership.rank,
            world_size=membership.world_size, timeout=self.timeout))

    def form_from_env(self):
        self._init(lambda: dist.init_process_group(self.backend, timeout=self.timeout))

    def extend(self, build):
        """Runs `build` (it forms subgroups of the default group: a
        DeviceMesh, new_group) and counts the sockets it opened as the
        group's, so that interrupt() reaches the subgroups' collectives too.
        Returns what `build` returned."""
        with self._lock:
            before = _socket_inodes()
        result = build()
        with self._lock:
            opened = {fd: inode for fd, inode in _socket_inodes().items()
                      if before.get(fd) != inode}
            if self._sockets is not None:
                self._sockets.update(opened)
        return result

    def _init(self, init):
        with self._lock:
            self._before = _socket_inodes()
            self._sockets = None
        init()
        with self._lock:
            now = _socket_inodes()
            self._sockets = {fd: inode for fd, inode in now.items()
                             if self._before.get(fd) != inode}
            self._formed = True

    def _group_sockets(self):
        if self._sockets is not None:
            return self._sockets
        if self._before is None:
            return {}
        # Still forming: what opened since it began (the store's, gloo's so far).
        return {fd: inode for fd, inode in _socket_inodes().items()
                if self._before.get(fd) != inode}

    def interrupt(self):
        """Fails the group's blocked collectives; returns what it did."""
        if self.backend == "nccl":
            return self._abort_once()
        with self._lock:
            shut = [fd for fd, inode in self._group_sockets().items() if _shut_down_tcp(fd, inode)]
            return f"shut down {len(shut)} socket(s)"

    def _abort_once(self):
        with self._lock:
            if not self._formed:
                return "no group formed"
            if self._abort is None:
                done, result = threading.Event(), {}

                def run():
                    try:
                        result["what"] = "aborted" if _abort_nccl() else "no abort in this torch"
                    except Exception as e:  # already aborted or destroyed
                        result["what"] = f"abort failed: {e}"
                    done.set()

                self._abort = (done, result)
                threading.Thread(target=run, name="muster-nccl-abort", daemon=True).start()
            done, result = self._abort
        if not done.wait(ABORT_TIMEOUT_S):
            raise AbortStuck(f"torch's NCCL abort did not return within {ABORT_TIMEOUT_S:.0f} s")
        return result["what"]

    def destroy(self, interrupt: bool):
        """`interrupt`: first fail what may still wait on a peer (a fault);
        a group that ended cleanly is destroyed as it is."""
        if dist.is_initialized():
            if interrupt:
                self.interrupt()
            with self._lock:
                self._formed = False
                self._before = self._sockets = None
                self._abort = None
            dist.destroy_process_group()

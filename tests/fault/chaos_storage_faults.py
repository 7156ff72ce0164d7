"""The checkpoint faults of a chaos run: ckpt_kill (rank 0 SIGKILLed mid-save, seen
through inotify) and disk_full (the checkpoint tmpfs filled, then freed)."""
import ctypes
import errno
import os
import select
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_checks  # noqa: E402
import chaos_cluster as cluster  # noqa: E402
from chaos_checks import InvariantError  # noqa: E402
from chaos_common import RECOVERY_TIMEOUT, RESTORE_TIMEOUT  # noqa: E402


class Inotify:
    """IN_CREATE/IN_MOVED_TO events of one directory (ctypes; no dependency)."""

    IN_CREATE, IN_MOVED_TO = 0x100, 0x80

    def __init__(self, path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if self.libc.inotify_add_watch(self.fd, path.encode(),
                                       self.IN_CREATE | self.IN_MOVED_TO) < 0:
            os.close(self.fd)
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")

    def names(self, timeout):
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        names, pos = [], 0
        while pos + 16 <= len(data):
            _, _, _, length = struct.unpack_from("iIII", data, pos)
            names.append(data[pos + 16:pos + 16 + length].rstrip(b"\0").decode(errors="replace"))
            pos += 16 + length
        return names

    def close(self):
        os.close(self.fd)


class StorageFaults:
    """The checkpoint faults. A part of chaos.Chaos: its methods share the run's state on self."""

    def inject_ckpt_kill(self, fault, master_rec):
        watch = Inotify(self.ckpt_dir)
        try:
            deadline = time.monotonic() + 20
            temp = None
            while time.monotonic() < deadline and temp is None:
                for name in watch.names(0.5):
                    if chaos_checks.CKPT_TEMP.match(name):
                        temp = name
                        break
                self.check_processes()
            if temp is None:
                raise InvariantError("checkpoints are written",
                                     f"no checkpoint temp file appeared in {self.ckpt_dir} in 20s")
            fault.t = time.time()
            cluster.kill_pid(master_rec["pid"], master_rec["ticks"])
        finally:
            watch.close()
        still = os.path.exists(os.path.join(self.ckpt_dir, temp))
        fault.target = (f"rank 0 pid {master_rec['pid']} host {master_rec['host']} while writing "
                        f"{temp}")
        fault.notes.append("killed mid-save (temp file still there)" if still
                           else "the save finished before the SIGKILL landed")

    def inject_disk_full(self, fault):
        """Fills the checkpoint tmpfs; the next save must fail with a clear error and leave
        no corrupt checkpoint; once space is freed, checkpoints must be written again."""
        fault.target = f"tmpfs {self.ckpt_mount} (1 MiB) filled"
        fault.t = time.time()
        written = 0
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (65536, 4096, 512, 1):  # down to the last partial block
                block = b"\0" * size
                while True:
                    try:
                        written += os.write(fd, block)
                    except OSError as e:
                        if e.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)
        self.faults.append(fault)
        self.say(f"FAULT disk_full: {fault.target} ({written // 1024} KiB of filler)")
        def enospc():
            self.parse()
            for t, source, text in self.agent_err:
                if t > fault.t and "No space left" in text:
                    return t, f"{source}: {text}"
            return None
        clear = self.wait(enospc, 30)
        if not clear:
            raise InvariantError("a full disk fails the checkpoint write with a clear error",
                                 "no 'No space left on device' message within 30 s of filling "
                                 f"{self.ckpt_mount}\n" + self.agent_tails())
        fault.notes.append(f"error: {clear[1][:200]}")
        if self.args.recovery == "in-place":
            # The save fails and training goes on in place (the state is alive):
            # no new generation; the checkpoints may fall behind until space is freed.
            stepped = self.wait(lambda: self.first_step_after(clear[0]), RECOVERY_TIMEOUT)
            if not stepped:
                raise InvariantError("the job recovers",
                                     "disk_full: no step after the failed save within "
                                     f"{RECOVERY_TIMEOUT:.0f}s\n" + self.agent_tails())
            fault.detected, fault.recovered = clear[0], stepped
            newest, temps = self.check_invariants("disk_full", checkpoints_behind_ok=True)
        else:
            self.wait_recovered(fault)
            found = self.detect(fault)
            if found:
                fault.detected, fault.detect_line = found
            newest, temps = self.check_invariants("disk_full")
        if temps:
            fault.notes.append(f"temp files left while full: {temps}")
        os.unlink(self.filler)
        fault.restored = time.time()
        # Checkpoints must resume: one newer than any written before freeing.
        resumed = self.wait(lambda: any(s > (newest or 0) and why is None for s, why in
                                        chaos_checks.scan_checkpoints(self.ckpt_dir)[0].items()),
                            RESTORE_TIMEOUT)
        if not resumed:
            raise InvariantError("checkpoints are written again once space is freed",
                                 f"no checkpoint after step {newest} within "
                                 f"{RESTORE_TIMEOUT:.0f}s of freeing {self.ckpt_mount}\n"
                                 + self.agent_tails())
        self.check_invariants("disk_full freed")
        self.wait_steady("after freeing the disk")
        return fault


"""Processes read from /proc and killed by pid.

A pid names a process only while it lives: a caller that may signal a pid long after it
started it passes the start time it read then (`start_ticks(pid)`), and the signal is sent
only while the pid still has that start time (not a reused pid). Nothing here kills by a
name pattern.
"""
import os
import signal


def _stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def state(pid):
    """(state letter, ppid) of `pid`, or (None, None) when it is gone."""
    fields = _stat_fields(pid)
    if not fields:
        return None, None
    try:
        return fields[0], int(fields[1])
    except (IndexError, ValueError):
        return None, None


def start_ticks(pid):
    """The kernel's start time of `pid` (clock ticks since boot), or None when it is gone or
    a zombie."""
    fields = _stat_fields(pid)
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def alive(pid, ticks=None):
    """True while `pid` exists and is neither a zombie nor dead (and, with `ticks`, is still
    the process that started then)."""
    now = start_ticks(pid)
    return now is not None and (ticks is None or now == ticks)


def children(pid):
    """The direct children of `pid` (every thread's), from /proc/PID/task/*/children."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return found


def descendants(pid):
    """Every live descendant of `pid` (zombies excluded), found through /proc/*/stat: a
    child re-parented to a subreaper is not among them."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields and fields[0] != "Z":
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def status_kib(pid, field="VmRSS"):
    """A memory field of /proc/PID/status (VmRSS, VmHWM, ...) in KiB, or None when the
    process is gone or has no such field."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def cmdline(pid):
    """The command line of `pid` as bytes, arguments separated by NUL, or b"" when gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def processes_naming(text):
    """The pids of live processes (not this one) whose command line contains `text`."""
    needle = text.encode()
    return [int(name) for name in os.listdir("/proc")
            if name.isdigit() and int(name) != os.getpid() and needle in cmdline(name)
            and start_ticks(int(name)) is not None]


def kill(pid, ticks=None, group=False, sig=signal.SIGKILL):
    """Sends `sig` to `pid` (first to its process group when `group`) if it is still the
    process that started at `ticks` (any, without). A process already gone, or not ours to
    signal, is passed over."""
    if ticks is not None and start_ticks(pid) != ticks:
        return
    targets = [lambda: os.killpg(pid, sig)] if group else []
    targets.append(lambda: os.kill(pid, sig))
    for target in targets:
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(pid):
    """SIGKILLs `pid`'s process group and `pid` (muster and its workers each lead one)."""
    kill(pid, group=True)


def kill_pids(pids, group=True):
    """SIGKILLs each of `pids` (with its process group unless group=False)."""
    for pid in pids:
        kill(pid, group=group)

"""Worker output reaches the console as it comes: a progress bar redrawn with
'\\r' and no newline until the end shows each redraw promptly, prefixed once
per segment; --log-dir files still get the worker's exact bytes.

muster's stderr is read through a pipe, each chunk stamped with its arrival
time; the worker stamps each update after writing it (workers/progress_bar.py).
Both use CLOCK_MONOTONIC, which is one clock for every process of the machine.
"""
import glob
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (MUSTER, PYTHON, Skip, check, run_tests, start, tempdir, test,  # noqa: E402
                     worker)

# How late an update may reach muster's reader. A bar's redraw goes out as it
# arrives; the bounds leave room for a loaded 2-core machine (sanitizers,
# parallel tests). Output held until the end of the bar fails the check that
# does not depend on load: the first update must be shown before the last is
# written.
EACH_UPDATE_BOUND_S = 3.0
MEDIAN_UPDATE_BOUND_S = 1.0


class TimedReader:
    """Reads a pipe to its end on a thread, keeping (arrival time, bytes)."""

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        self.chunks = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            data = os.read(self.fd, 65536)
            if not data:
                return
            self.chunks.append((time.monotonic(), data))

    def join(self, timeout):
        self.thread.join(timeout)
        check(not self.thread.is_alive(), "the pipe stayed open")

    def text(self):
        return b"".join(data for _, data in self.chunks).decode()

    def arrival_of(self, marker):
        """When the first occurrence of `marker` had fully arrived; None if never."""
        whole = b"".join(data for _, data in self.chunks)
        at = whole.find(marker.encode())
        if at < 0:
            return None
        end = at + len(marker.encode())
        received = 0
        for arrived, data in self.chunks:
            received += len(data)
            if received >= end:
                return arrived
        return None


def run_bars(style, nproc, steps, interval, extra_args=()):
    """Runs muster with progress_bar.py workers; returns (stderr reader, stdout, stamp dir)."""
    stamp_dir = tempdir()
    proc = start([MUSTER, "--nproc-per-node", str(nproc), *extra_args,
                  worker("progress_bar.py"), style, str(steps), str(interval), stamp_dir])
    err = TimedReader(proc.stderr)
    out = proc.stdout.read()
    code = proc.wait(timeout=60)
    err.join(10)
    check(code == 0, f"muster exited {code}", err.text(), out)
    return err, out, stamp_dir


def read_stamps(stamp_dir, rank):
    with open(os.path.join(stamp_dir, f"{rank}.stamps")) as f:
        return {int(update): float(t) for update, t in (line.split() for line in f)}


def check_updates_arrived_promptly(err, stamps, marker_of):
    late = {}
    for update, written in sorted(stamps.items()):
        arrived = err.arrival_of(marker_of(update))
        check(arrived is not None, f"update {update} ({marker_of(update)!r}) never shown",
              repr(err.text()))
        late[update] = arrived - written
    check(max(late.values()) <= EACH_UPDATE_BOUND_S,
          f"an update was shown more than {EACH_UPDATE_BOUND_S}s after it was written: {late}")
    check(statistics.median(late.values()) <= MEDIAN_UPDATE_BOUND_S,
          f"updates were shown {statistics.median(late.values()):.3f}s late (median): {late}")
    # Independent of load: the first update was shown while the bar still ran.
    check(err.arrival_of(marker_of(0)) < stamps[max(stamps)],
          f"the first update was shown only after the last was written: {late}")


def bar_segments(text):
    """The '\\r'-separated segments of every console line that show a bar."""
    return [[segment for segment in line.split("\r") if segment]
            for line in text.split("\n") if "|" in line]


def style_segment(update, steps):
    done = 10 * update // steps
    return f"{100 * update // steps:3d}%|{'#' * done}{' ' * (10 - done)}| {update}/{steps}"


@test
def carriage_return_updates_reach_the_console_live_and_prefixed():
    steps = 8
    logs = tempdir()
    err, _, stamp_dir = run_bars("style", 1, steps, 0.4, ["--log-dir", logs])
    check_updates_arrived_promptly(err, read_stamps(stamp_dir, 0),
                                   lambda u: "[rank0]: " + style_segment(u, steps))
    # Each redraw re-gets the prefix after its '\r'; no segment gets two.
    expected = "".join("\r[rank0]: " + style_segment(u, steps) for u in range(steps + 1)) + "\n"
    check(expected in err.text(), "the console shows each redraw, prefixed once",
          repr(err.text()), repr(expected))
    # The log file holds the worker's bytes exactly, prefix-free.
    files = glob.glob(os.path.join(logs, "**", "stderr.log"), recursive=True)
    check(len(files) == 1, f"one stderr log expected: {files}")
    with open(files[0], "rb") as f, open(os.path.join(stamp_dir, "0.bytes"), "rb") as w:
        logged, written = f.read(), w.read()
    check(logged == written, "the log file holds what the worker wrote", repr(logged),
          repr(written))


@test
def two_workers_bars_never_share_a_console_line():
    steps = 6
    err, _, stamp_dir = run_bars("style", 2, steps, 0.3)
    for rank in (0, 1):
        check_updates_arrived_promptly(err, read_stamps(stamp_dir, rank),
                                       lambda u, r=rank: f"[rank{r}]: " + style_segment(u, steps))
    for segments in bar_segments(err.text()):
        prefixes = {segment.split(":", 1)[0] for segment in segments}
        check(len(prefixes) == 1 and all(s.count("[rank") == 1 for s in segments),
              f"a console line mixes workers or doubles a prefix: {segments!r}", repr(err.text()))
        check(all(s.startswith("[rank") for s in segments), f"unprefixed segment: {segments!r}")


@test
def a_real_tqdm_bar_reaches_the_console_live():
    probe = subprocess.run([PYTHON, "-c", "import tqdm"], capture_output=True)
    if probe.returncode != 0:
        raise Skip(f"tqdm is not installed for {PYTHON} (Debian package python3-tqdm)")
    steps = 8
    logs = tempdir()
    err, _, stamp_dir = run_bars("tqdm", 1, steps, 0.4, ["--log-dir", logs])
    check_updates_arrived_promptly(err, read_stamps(stamp_dir, 0),
                                   lambda u: f"| {u}/{steps}")
    segments = [s for line in bar_segments(err.text()) for s in line]
    check(len(segments) >= steps + 1, "every update drawn", repr(err.text()))
    for segment in segments:
        check(segment.startswith("[rank0]: ") and segment.count("[rank0]") == 1,
              f"segment not prefixed exactly once: {segment!r}", repr(err.text()))
    files = glob.glob(os.path.join(logs, "**", "stderr.log"), recursive=True)
    check(len(files) == 1, f"one stderr log expected: {files}")
    with open(files[0], "rb") as f, open(os.path.join(stamp_dir, "0.bytes"), "rb") as w:
        logged, written = f.read(), w.read()
    check(logged == written, "the log file holds what tqdm wrote", repr(logged), repr(written))


if __name__ == "__main__":
    run_tests()

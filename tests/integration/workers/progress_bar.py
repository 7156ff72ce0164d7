"""A worker that draws a progress bar on stderr, as training scripts do.

usage: progress_bar.py STYLE STEPS INTERVAL STAMP_DIR
  STYLE    "style": writes tqdm's way by hand: "\\r" + the bar, no newline until
           the end; "tqdm": uses the real tqdm
  STEPS    how many updates after the first (0/STEPS) drawing
  INTERVAL seconds slept between updates

After each update is written and flushed, appends "<update> <time.monotonic()>"
to STAMP_DIR/<rank>.stamps, so a reader can tell how late each update reached
it. STAMP_DIR/<rank>.bytes gets every byte written to stderr, in order.
"""
import os
import sys
import time

style, steps, interval, stamp_dir = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rank = os.environ["RANK"]
stamps = open(os.path.join(stamp_dir, f"{rank}.stamps"), "w")
written = open(os.path.join(stamp_dir, f"{rank}.bytes"), "w")


def stamp(update):
    stamps.write(f"{update} {time.monotonic()}\n")
    stamps.flush()


class Recorder:
    """stderr as tqdm sees it: every write also goes to the .bytes file."""

    def write(self, text):
        written.write(text)
        return sys.stderr.write(text)

    def flush(self):
        written.flush()
        sys.stderr.flush()


if style == "style":
    out = Recorder()
    for i in range(steps + 1):
        done = 10 * i // steps
        out.write(f"\r{100 * i // steps:3d}%|{'#' * done}{' ' * (10 - done)}| {i}/{steps}")
        out.flush()
        stamp(i)
        if i < steps:
            time.sleep(interval)
    out.write("\n")
    out.flush()
else:
    from tqdm import tqdm

    bar = tqdm(total=steps, file=Recorder(), mininterval=0, miniters=1, ascii=True, ncols=60,
               bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt}")
    stamp(0)
    for i in range(1, steps + 1):
        time.sleep(interval)
        bar.update(1)
        stamp(i)
    bar.close()
written.close()
stamps.close()

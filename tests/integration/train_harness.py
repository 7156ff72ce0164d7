"""What the muster-train tests share: the trainer, their small model, and
readers of its outputs (the --out parameter file, the final loss line)."""
import array
import os

from harness import BIN_DIR, check

TRAIN = os.path.join(BIN_DIR, "muster-train")

# Small enough for 2 cores, big enough to have several gradient buckets.
MODEL_FLAGS = {"--hidden": "64", "--depth": "2", "--features": "32", "--global-batch": "64",
               "--dataset-size": "4096", "--bucket-mb": "0.004"}
MODEL = [part for flag, value in MODEL_FLAGS.items() for part in (flag, value)]


def model(**changes):
    """MODEL with some values changed: model(dataset_size=1000) gives --dataset-size 1000."""
    flags = dict(MODEL_FLAGS)
    for name, value in changes.items():
        flag = "--" + name.replace("_", "-")
        check(flag in flags, f"{flag} is not one of MODEL's flags")
        flags[flag] = str(value)
    return [part for flag, value in flags.items() for part in (flag, value)]


def read_floats(path):
    """The parameters muster-train's --out wrote (raw little-endian float32)."""
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    return values


def final_loss(out):
    lines = [line for line in out.splitlines() if "final loss" in line]
    check(lines, "no 'final loss' line", out)
    return float(lines[-1].split("final loss")[1])


def max_relative_difference(a, b):
    """The largest |x - y| / max(|x|, |y|, 1e-3) over two equally long weight lists."""
    check(len(a) == len(b), f"parameter counts differ: {len(a)} vs {len(b)}")
    return max((abs(x - y) / max(abs(x), abs(y), 1e-3) for x, y in zip(a, b)), default=0.0)

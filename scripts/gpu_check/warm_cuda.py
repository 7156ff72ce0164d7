import time; FIRST_LINE = time.time()  # noqa: E702 - first line: before anything else runs
"""gpu_check.sh's `warm` step: one worker that initialises CUDA after muster
started it, warm (forked from the node's warm process) or cold (a fresh
interpreter), and says which it was and how long it took.

The machine's Python has no CUDA-enabled torch, so the GPU work goes through
ctypes on the CUDA runtime (libcudart from /usr/local/cuda): cudaGetDeviceCount,
cudaSetDevice(LOCAL_RANK % count), cudaMalloc 64 MiB, cudaMemset,
cudaDeviceSynchronize, cudaFree, each checked. torch, where installed, is
imported as a torch user's script would; it is named through importlib (not
an import statement the warm process would find and require), and the step
passes --warm-import torch when the interpreter has it.

Prints one line on stdout:
  WARM_CUDA {"rank": R, "local_rank": L, "pid": P, "forked_warm": bool,
             "preloaded": bool, "start_to_first_s": S, "first_to_sync_s": S,
             "t_first": EPOCH, "t_sync": EPOCH, "device": D, "devices": N}
forked_warm: this process's command line (/proc/self/cmdline) is the warm
process's bootstrap (`python -u -c ...channel...`), not `python -u SCRIPT`;
preloaded: torch was in sys.modules at the first line. start_to_first_s: from
the process's start (/proc/self/stat field 22, 10 ms ticks) to the first line.
On a failure: one line `warm_cuda.py: rank R: ...` on stderr, exit 1.
"""
import sys

PRELOADED = "torch" in sys.modules

import ctypes  # noqa: E402
import glob  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

RANK = os.environ.get("RANK", "?")
ALLOC_BYTES = 64 << 20


def fail(message):
    print(f"warm_cuda.py: rank {RANK}: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def start_to_first_line():
    """Seconds from the process's start (its fork: /proc/self/stat field 22,
    in 10 ms ticks of the boot-time clock) to the first line, or None."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22; fields[0] is field 3
        first_line = time.clock_gettime(time.CLOCK_BOOTTIME) - (time.time() - FIRST_LINE)
        return round(first_line - started, 3)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def forked_warm():
    """True when this process runs on the warm process's command line."""
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return len(argv) > 2 and argv[1:3] == [b"-u", b"-c"] and b"channel" in argv[3]


def find_cudart():
    """Paths to try for the CUDA runtime, most specific first."""
    roots = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    roots += sorted(glob.glob("/usr/local/cuda-*"))
    found = []
    for root in filter(None, roots):
        for lib in ("lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib", "lib"):
            found += sorted(glob.glob(os.path.join(root, lib, "libcudart.so*")), reverse=True)
    import ctypes.util

    system = ctypes.util.find_library("cudart")
    if system:
        found.append(system)
    return list(dict.fromkeys(found))


def load_cudart():
    candidates = find_cudart()
    errors = []
    for path in candidates:
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    if not candidates:
        fail("no CUDA runtime: no libcudart.so* in /usr/local/cuda/{lib64,targets/x86_64-linux/lib}"
             " (nor $CUDA_HOME, /usr/local/cuda-*, the linker's path)")
    fail("cannot load the CUDA runtime: " + "; ".join(errors))


def main():
    try:
        importlib.import_module("torch")  # what a torch user's script imports, where torch exists
    except ImportError:
        pass
    cudart = load_cudart()
    cudart.cudaGetErrorString.restype = ctypes.c_char_p

    def check(call, *args):
        code = getattr(cudart, call)(*args)
        if code != 0:
            text = cudart.cudaGetErrorString(code)
            fail(f"{call} failed: error {code}: {text.decode() if text else '?'}")

    count = ctypes.c_int(0)
    check("cudaGetDeviceCount", ctypes.byref(count))
    if count.value < 1:
        fail("cudaGetDeviceCount found no GPU")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = local_rank % count.value
    check("cudaSetDevice", ctypes.c_int(device))
    pointer = ctypes.c_void_p()
    check("cudaMalloc", ctypes.byref(pointer), ctypes.c_size_t(ALLOC_BYTES))
    check("cudaMemset", pointer, ctypes.c_int(0x5A), ctypes.c_size_t(ALLOC_BYTES))
    check("cudaDeviceSynchronize")
    synced = time.time()
    check("cudaFree", pointer)
    record = {
        "rank": int(os.environ.get("RANK", "-1")),
        "local_rank": local_rank,
        "pid": os.getpid(),
        "forked_warm": forked_warm(),
        "preloaded": PRELOADED,
        "start_to_first_s": start_to_first_line(),
        "first_to_sync_s": round(synced - FIRST_LINE, 4),
        "t_first": round(FIRST_LINE, 6),
        "t_sync": round(synced, 6),
        "device": device,
        "devices": count.value,
    }
    print("WARM_CUDA " + json.dumps(record), flush=True)


if __name__ == "__main__":
    main()

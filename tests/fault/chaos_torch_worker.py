"""Worker wrapper for the chaos suite's torch trainer (chaos.py --trainer torch):
records who it is, then runs the torch script in this same process.

usage: muster ... chaos_torch_worker.py RECORD_DIR SCRIPT [SCRIPT_ARGS...]

muster runs it as the workers' Python script, so every worker is forked from
the node's warm process, which imports what this file imports (torch and the
muster package) once per node: a replacement starts without paying for
`import torch`, as the script alone would under muster. It writes
chaos_worker.py's record (the same fields; the pid is this process, which
becomes the script's) and runs SCRIPT as __main__ with sys.argv = [SCRIPT] +
SCRIPT_ARGS: the script's command line is the one it would have been given
directly. A survivor that muster recovers in place never runs this again: the
driver writes its record for the generation it joins from the agent's
event=in_place_rejoin line. `kill -USR1 PID` prints every thread's Python
stack on the worker's stderr (faulthandler): what a stuck worker is doing.
"""
import faulthandler
import os
import runpy
import signal
import sys

import muster  # noqa: F401 - imported by the warm process (its scan of this file)
import torch  # noqa: F401 - likewise

import chaos_worker


def main():
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    record_dir, script = sys.argv[1], sys.argv[2]
    args = chaos_worker.write_record(record_dir, sys.argv[3:])
    sys.argv = [script] + args
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()

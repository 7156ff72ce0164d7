"""A build tree's compile_commands.json, for the compile-time scripts
(header_costs.py, flag_costs.py): its units and their commands, without
the compiler cache, the object file or the dependency file, so that a
script can compile a unit again wherever it likes."""
import json
import os
import re
import shlex
import sys


def units(build_dir, match, limit):
    """The .cc units whose path matches the regex MATCH, at most LIMIT of
    them, spread over the list (so over the tree). Generated sources count
    only once the build has written them."""
    path = os.path.join(build_dir, "compile_commands.json")
    if not os.path.isfile(path):
        sys.exit(f"compile_db: no {path} (configure the build first)")
    with open(path) as db:
        entries = [e for e in json.load(db) if e["file"].endswith(".cc") and re.search(match, e["file"])
                   and os.path.isfile(e["file"])]
    if not entries:
        sys.exit(f"compile_db: no .cc file in {path} matches {match!r}")
    return entries[:: max(1, len(entries) // limit)][:limit]


def compile_argv(entry):
    """The unit's compiler and flags, less ccache, -o and the -M* options."""
    argv = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    while argv and os.path.basename(argv[0]) == "ccache":
        argv.pop(0)
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif arg not in ("-MD", "-MMD"):
            out.append(arg)
    return out

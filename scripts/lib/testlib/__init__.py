"""What the tests (tests/) and the benchmarks (scripts/bench/) share: ports, processes,
network namespaces and the torch references.

    ports       free_port(): a port nobody else is handed or can take, held for the process
    procs       process states from /proc, descendants, killing by pid and process group
    netns       processes inside network namespaces; a node behind a veth pair of its own
    torch_refs  the torch installations the suites run against (host 1.13, the chroots)

A file that uses it puts this folder on its import path first, always the same way:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    <".." up to the source root>, "scripts", "lib"))
    from testlib import ports, procs

Nothing here starts a process that outlives its caller's cleanup: every helper that kills
does so by pid (and process group), never by a name pattern.
"""

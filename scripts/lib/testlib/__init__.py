"""What the tests (tests/) and the benchmarks (scripts/bench/) share: ports, processes,
network namespaces and the torch references.

    ports       free_port(): a port nobody else is handed or can take, held open by this
                process until it exits (the one rule: never hand on a closed port);
                bound_port(): the port a server announced it bound (--port 0)
    procs       process states from /proc, descendants, killing by pid and process group
    netns       network namespaces: a bridge of hosts (tests/fixtures/netns_hosts.sh), a
                node behind a veth pair of its own, killing what runs inside them
    torch_refs  the torch installations the suites run against (host 1.13, the chroots)
                and the torchrun references the benchmarks compare with

A file that uses it puts scripts/lib on its import path first, always the same way, by
the path from its own folder (a benchmark: "..", "lib"; an integration test's harness:
"..", "..", "scripts", "lib"):

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from testlib import ports, procs  # noqa: E402

Nothing here starts a process that outlives its caller's cleanup: every helper that kills
does so by pid (and process group), never by a name pattern.
"""

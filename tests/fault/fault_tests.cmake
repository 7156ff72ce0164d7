# The chaos suite (tests/fault/chaos.py): a real elastic muster-train job across
# three hosts (network namespaces as root, loopback otherwise) under a seeded
# schedule of faults, checked for its invariants after each. Included from
# tests/CMakeLists.txt, so the script path is relative to tests/. The CI pass is
# chaos.py's defaults: --seed 1 --duration 120 --hosts 3 (about 130 s).
muster_integration_test(chaos fault/chaos.py TIMEOUT 180 LABELS fault chaos)
# The same schedule with muster's --recovery in-place: survivors pause and
# rejoin; the invariants and the fault-free weights hold the same.
muster_integration_test(chaos_in_place fault/chaos.py ARGS --recovery in-place TIMEOUT 180
                        LABELS fault chaos)
# Never both at once: each loads 2 cores with 3 hosts' workers, and its
# recovery bounds assume it has the machine.
set_tests_properties(integration/chaos integration/chaos_in_place PROPERTIES RESOURCE_LOCK chaos)

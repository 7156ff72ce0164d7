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
# A replicated rendezvous: one etcd member and three musterd replicas (each on a
# host namespace of its own as root), the leader SIGKILLed or its link cut
# between worker and agent kills; no worker may restart when only the leader
# moved (about 75 s; exits 77, Skipped, without etcd; leader_cut needs root).
muster_integration_test(chaos_replicas fault/chaos.py
                        ARGS --replicas 3 --faults leader_kill,leader_cut,worker_kill,agent_kill
                             --duration 60
                        TIMEOUT 150 LABELS fault chaos replica)
# Never two at once: each loads 2 cores with 3 hosts' workers, and its
# recovery bounds assume it has the machine.
set_tests_properties(integration/chaos integration/chaos_in_place integration/chaos_replicas
                     PROPERTIES RESOURCE_LOCK chaos)

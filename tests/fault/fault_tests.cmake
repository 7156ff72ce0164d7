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
# A real PyTorch DDP script (examples/torch/ddp_in_place.py with the muster
# Python package, the host's torch 1.13) recovering in place: survivors keep
# their process, a process started into a generation takes its state from a
# peer, and the final weights equal a fault-free run's within 1e-5 absolute.
# Every kind that applies (no checkpoint: no ckpt_kill or disk_full; flood is
# the daemon's alone and left to the chaos test; link_down and partition are
# skipped without root). It runs with muster's default hang rule, --hang-timeout
# auto (the others with a fixed 3 s): no false hang under faults, in-place
# pauses included, and a stopped worker found by the learned rule. About 95 s;
# exits 77, Skipped, without torch.
muster_integration_test(chaos_torch_in_place fault/chaos.py
                        ARGS --trainer torch --duration 60 --hang-timeout auto
                             --faults worker_kill,worker_hang,agent_kill,master_kill,daemon_kill,link_down,partition
                        TIMEOUT 180 LABELS fault chaos torch)
# Never two at once: each loads 2 cores with 3 hosts' workers, and its
# recovery bounds assume it has the machine. COST: one after another they
# take about 7 minutes, the suite's longest chain, so they start first (a
# fresh build tree has no ctest timings to order by): the suite never ends
# on a chaos test alone with the other slot idle.
set_tests_properties(integration/chaos integration/chaos_in_place integration/chaos_replicas
                     integration/chaos_torch_in_place
                     PROPERTIES RESOURCE_LOCK chaos COST 1000)

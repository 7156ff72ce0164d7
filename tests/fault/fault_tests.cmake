# The chaos suite (tests/fault/chaos.py): a real elastic muster-train job across
# three hosts (network namespaces as root, loopback otherwise) under a seeded
# schedule of faults, checked for its invariants after each. Included from
# tests/CMakeLists.txt, so the script path is relative to tests/. The CI pass is
# chaos.py's defaults: --seed 1 --duration 120 --hosts 3 (about 130 s).
muster_integration_test(chaos fault/chaos.py TIMEOUT 180 LABELS fault chaos)

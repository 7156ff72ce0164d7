# Stragglers end to end: musterd and three agents on loopback, workers that
# report steps on their progress pipe; one slow node is flagged, a fault-free
# run flags none.
muster_integration_test(straggler straggler_test.py TIMEOUT 180 LABELS elastic)

# musterd's /metrics parsed by the Prometheus client's own parser: run
# labels, per-node series only on request, the daemon's token on the port.
muster_integration_test(metrics metrics_test.py TIMEOUT 120 LABELS elastic)

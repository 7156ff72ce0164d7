# Multi-host: musterd and three agents in network namespaces on a bridge; one
# host's link is cut (needs root; reported as Skipped otherwise).
muster_integration_test(netns netns_test.py TIMEOUT 180 LABELS netns)

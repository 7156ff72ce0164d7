# TLS between agents and musterd across hosts in network namespaces: mutual
# TLS refuses outsiders while the job runs, a misnamed daemon is refused, and
# the token is on the wire only without TLS (needs root; Skipped otherwise);
# and an agent serving the rendezvous serves mutual TLS (loopback).
muster_integration_test(tls_netns tls_netns_test.py TIMEOUT 180 LABELS netns tls)

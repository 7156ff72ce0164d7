# TLS between agents and musterd across hosts in network namespaces: mutual
# TLS refuses outsiders while the job runs, a misnamed daemon is refused, and
# the token is on the wire only without TLS (needs root; Skipped otherwise);
# and an agent serving the rendezvous serves mutual TLS (loopback).
muster_integration_test(tls_netns tls_netns_test.py TIMEOUT 180 LABELS netns tls)

# TLS on loopback: a wrong token under TLS is refused at its first message,
# and a byte flipped in an agent's TLS stream (a proxy in the test) closes
# that connection while musterd and the job go on.
muster_integration_test(tls_loopback tls_loopback_test.py TIMEOUT 60 LABELS tls)

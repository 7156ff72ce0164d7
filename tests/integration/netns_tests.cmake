# Multi-host: musterd and three agents in network namespaces on a bridge; one
# host's link is cut. And two hosts whose own names resolve to 127.0.1.1
# (private /etc/hosts and hostname per host): no loopback master address
# reaches another host (needs root; reported as Skipped otherwise).
muster_integration_test(netns netns_test.py TIMEOUT 240 LABELS netns)
# One timing for the whole run: an agent started with heartbeat_timeout=10 under a
# default musterd is cut off and stops its workers before the survivors' new
# generation starts (workers write timestamps; no two generations overlap).
muster_integration_test(netns_timing timing_netns_test.py TIMEOUT 60 LABELS netns)
# Replicas across hosts: etcd, three musterd replicas and three agents in
# namespaces; the leader's host link is cut and the agents follow a new leader.
muster_integration_test(netns_replica netns_replica_test.py TIMEOUT 240 LABELS netns replica)
# The worker store admits only the job's hosts: a third host's connection is
# closed and counted while the job runs on two, until a generation admits it.
muster_integration_test(netns_store_admission store_admission_netns_test.py TIMEOUT 120
                        LABELS netns store)

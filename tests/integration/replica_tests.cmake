# musterd replicas and their leader election, against a real etcd cluster on
# loopback (Debian's etcd-server; skipped with the reason when absent).
muster_integration_test(replica replica_test.py TIMEOUT 240 LABELS elastic replica)
muster_integration_test(replica_agents replica_agents_test.py TIMEOUT 240 LABELS elastic replica)
# The same over TLS to etcd, with a throwaway CA made by the openssl command;
# and replicas serving agents over mutual TLS through a failover.
muster_integration_test(replica_tls replica_tls_test.py TIMEOUT 120 LABELS elastic replica tls)

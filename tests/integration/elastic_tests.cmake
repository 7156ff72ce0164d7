# The elastic rendezvous: musterd with several agents on loopback.
muster_integration_test(elastic elastic_test.py TIMEOUT 400 LABELS elastic sanitize)

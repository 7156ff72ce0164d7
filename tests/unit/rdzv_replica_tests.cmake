# Replicas of the rendezvous: the leader election's rules (pure, fake time).
muster_unit_test(rdzv_replica_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_replica_election_test.cc
  LIBS muster_rdzv_replica)

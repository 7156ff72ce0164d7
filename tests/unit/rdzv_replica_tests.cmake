# Replicas of the rendezvous: the leader election's rules (pure, fake time)
# etcd's JSON gateway bodies, its endpoints and TLS files, and the run records
# kept in etcd.
muster_unit_test(rdzv_replica_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_replica_election_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_replica_etcd_json_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_replica_etcd_endpoints_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_replica_run_record_test.cc
  LIBS muster_rdzv_replica nlohmann_json::nlohmann_json)

# The agent side of the rendezvous: pure pieces (backoff, the kept outcome
# report, the self-fencing rule, the walk over replicas, the wait for first
# contact) and the decision object made of them (ClientMachine), alone and
# against real daemons' cores (FakeReplicas).
muster_unit_test(rdzv_client_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_backoff_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_client_outcome_report_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_client_fence_rule_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_client_endpoint_walk_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_client_contact_wait_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_client_machine_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_client_failover_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_client_timing_agreement_test.cc
  LIBS muster_rdzv_client_logic muster_rdzv_state muster_rdzv_protocol)

# The agent side of the rendezvous: pure pieces (backoff).
muster_unit_test(rdzv_client_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_backoff_test.cc
  LIBS muster_rdzv_client)

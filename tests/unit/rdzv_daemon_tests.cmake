# The daemon shell's pure pieces: which master address each member is told,
# and the status document with the frame that carries it.
muster_unit_test(rdzv_daemon_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_advertised_address_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_status_reply_test.cc
  LIBS muster_rdzv_daemon)

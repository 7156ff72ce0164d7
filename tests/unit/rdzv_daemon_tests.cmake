# The daemon shell's pure pieces: which master address each member is told.
muster_unit_test(rdzv_daemon_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_advertised_address_test.cc
  LIBS muster_rdzv_daemon)

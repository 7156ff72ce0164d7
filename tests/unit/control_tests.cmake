# Unit tests of the agent<->worker control channel's language (control/).
muster_unit_test(control_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/control_message_test.cc
  LIBS muster_control)

# Fault plans (--inject): grammar, refusals, seeded draws.
muster_unit_test(fault_spec_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fault_spec_test.cc
  LIBS muster_fault_spec)

# Unit tests of the agent<->worker control channel's language (control/):
# its cases, and the shared test vectors control/test_vectors.txt (read at run
# time; tests/python/muster_control_vectors_test.py checks the Python package
# against the same file).
muster_unit_test(control_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/control_message_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/control_vectors_test.cc
  LIBS muster_control muster_quote)
target_compile_definitions(control_unit_tests PRIVATE
  MUSTER_CONTROL_TEST_VECTORS="${PROJECT_SOURCE_DIR}/control/test_vectors.txt")

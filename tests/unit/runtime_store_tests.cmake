# Unit tests of the worker runtime's store client: request bytes (checked
# against the worker store's own RequestDecoder and torch 1.13 captures) and
# reply decoding. No sockets.
muster_unit_test(runtime_store_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/runtime_store_wire_test.cc
  LIBS muster_runtime_store muster_store_protocol)

# Unit tests of the worker runtime's store client: request bytes (checked
# against the worker store's own RequestDecoder and torch 1.13 captures),
# reply decoding, connect backoff. No sockets.
muster_unit_test(runtime_store_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/runtime_store_wire_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/runtime_store_backoff_test.cc
  LIBS muster_runtime_store muster_store)

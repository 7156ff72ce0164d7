# Unit tests of the worker store (rendezvous/store): codec, key-value
# semantics and request handling. No sockets.
muster_unit_test(store_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/store_codec_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_key_value_store_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_request_handler_tests.cc
  LIBS muster_store)

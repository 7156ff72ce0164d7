# Unit tests of the worker store (store/): codec, the dialect rule,
# key-value semantics (queues and barriers included), request handling, the
# store's bounds, peer admission and refusal warnings, and
# the per-torch-version byte tables (store_torch_wire_tables.txt). No sockets.
muster_unit_test(store_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/store_codec_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_dialect_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_key_value_store_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_limits_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_peer_admission_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_refusal_log_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_queue_barrier_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_request_handler_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/store_torch_wire_tables_test.cc
  LIBS muster_store)
target_compile_definitions(store_unit_tests PRIVATE
  MUSTER_STORE_WIRE_TABLES="${CMAKE_CURRENT_LIST_DIR}/store_torch_wire_tables.txt")

# The worker store's listener on loopback: out of descriptors it pauses
# instead of spinning, and recovers (full_descriptor_table.h).
muster_unit_test(store_server_accept_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_accept_test.cc
  LIBS muster_store)

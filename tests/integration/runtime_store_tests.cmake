# Integration tests of the worker runtime's StoreClient against muster's
# worker store and against a real torch 1.13 TCPStore server, interleaved with
# torch clients. runtime_store_probe drives a StoreClient from stdin.
add_executable(runtime_store_probe ${CMAKE_CURRENT_LIST_DIR}/runtime_store_probe.cc)
target_link_libraries(runtime_store_probe PRIVATE muster_runtime_store)
set_target_properties(runtime_store_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

muster_integration_test(runtime_store_client runtime_store_client_test.py TIMEOUT 180 LABELS store sanitize)

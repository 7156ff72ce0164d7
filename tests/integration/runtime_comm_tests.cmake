# Integration tests of the communicators: N runtime_comm_worker processes on
# loopback rendezvous through a real store (store_server_main, from
# store_tests.cmake) and check every collective's values, a killed peer and a
# stalled peer. The NCCL cases skip, with the reason, where no GPU is visible.
add_executable(runtime_comm_worker ${CMAKE_CURRENT_LIST_DIR}/runtime_comm_worker.cc)
target_link_libraries(runtime_comm_worker PRIVATE muster_runtime_comm muster_runtime_store
                                                  muster_runtime_bootstrap)
set_target_properties(runtime_comm_worker PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

muster_integration_test(runtime_comm runtime_comm_test.py TIMEOUT 180 LABELS runtime comm gpu sanitize)

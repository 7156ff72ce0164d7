# Integration tests of the worker store against real torch TCPStore clients
# and gloo workers. store_server_main is a test-only wrapper that serves a
# StoreServer on 127.0.0.1:0 and prints "port=N".
add_executable(store_server_main ${CMAKE_CURRENT_LIST_DIR}/store_server_main.cc)
target_link_libraries(store_server_main PRIVATE muster_store)
set_target_properties(store_server_main PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

muster_integration_test(store_torch_client store_torch_client_test.py TIMEOUT 120 LABELS store sanitize)
muster_integration_test(store_torch_workers store_torch_workers_test.py TIMEOUT 180 LABELS store sanitize)
muster_integration_test(store_bad_clients store_bad_clients_test.py TIMEOUT 120 LABELS store sanitize)

# Every operation of each real torch version's client (tests/integration/
# torch_versions.py): Debian's 1.13 on the host, 2.6 and 2.14 in chroots
# built by scripts/torch_chroots.sh (root only; skipped with the reason
# otherwise).
foreach(version 1.13 2.6 2.14)
  muster_integration_test(store_torch_${version} store_torch_versions_test.py TIMEOUT 300
                          LABELS store torch ENV MUSTER_TORCH_VERSIONS=${version})
endforeach()
# The store's bounds: a client that floods keys loses its connection, the
# agent's memory stays bounded and the job's own clients keep working.
muster_integration_test(store_limits store_limits_test.py TIMEOUT 60 LABELS store)
# The store's admission and memory bounds against a hostile client on
# loopback: data-then-reset while the store is stopped, the connection cap,
# a MULTI_GET asking for terabytes and GETs that are never read.
muster_integration_test(store_hostile_clients store_hostile_clients_test.py TIMEOUT 120
                        LABELS store)

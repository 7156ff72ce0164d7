# The daemon shell: its pure pieces (which master address each member is
# told, the status document with the frame that carries it, the status
# page's document and what its HTTP port answers), and the server
# carrying out the hello gate's and lead change's decisions on loopback.
muster_unit_test(rdzv_daemon_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_advertised_address_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_status_reply_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_status_page_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_http_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_server_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_run_metrics_test.cc
  LIBS muster_rdzv_daemon nlohmann_json::nlohmann_json)

# TLS on the rendezvous connection: loading files, and the daemon shell over
# loopback with certificates made at run time (tls_test_certs.h), an agent's
# client among its peers.
muster_unit_test(rdzv_net_tls_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_net_tls_test.cc
  LIBS muster_rdzv_daemon muster_rdzv_client)

# The small HTTP endpoints (status page, metrics, health): the pure request
# and token rules, and the server on loopback, plain and over TLS; the
# bounds where Beast's parser reads a head.
muster_unit_test(rdzv_net_http_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_net_http_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/rdzv_net_http_limits_test.cc
  LIBS muster_rdzv_net)

# The daemon shell's listener against costly peers: connections past
# --max-connections, TLS handshakes that never finish, a wrong token under
# TLS, and accepts that fail out of descriptors (docs/security.md).
muster_unit_test(rdzv_daemon_listener_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_listener_test.cc
  LIBS muster_rdzv_daemon)

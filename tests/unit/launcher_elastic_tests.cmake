# The launcher's elastic host rules: whether the rendezvous endpoint is this
# machine, who serves the rendezvous (torchrun's c10d rule), where the
# worker store listens. Pure: no resolver, no sockets.
muster_unit_test(launcher_elastic_unit_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/launcher_elastic_host_rules_test.cc
  LIBS muster_launcher)

# The launcher's elastic mode: the host rules (whether the rendezvous
# endpoint is this machine, who serves the rendezvous (torchrun's c10d rule),
# where the worker store listens) and the follower's decisions (what the
# agent does on each rendezvous and worker event; fake spawner, fake time).
# Pure: no resolver, no sockets, no processes.
muster_unit_test(launcher_elastic_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/launcher_elastic_host_rules_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_elastic_follower_test.cc
  LIBS muster_launcher)

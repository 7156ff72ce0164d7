# Tests of the worker runtime's checkpoints (worker_runtime/checkpoint):
# format, atomic write, pruning, and skipping torn or corrupt files. They use
# a temporary directory on the local file system.
muster_unit_test(runtime_checkpoint_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/runtime_checkpoint_test.cc
  LIBS muster_runtime_checkpoint spdlog::spdlog)

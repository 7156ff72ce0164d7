# Unit tests of the communicators' pure pieces: names and sizes, backend
# resolution, the average, the Gloo allreduce algorithm per size, and the
# one-rank communicator that CreateCommunicator builds without a store, and
# the shared-memory allreduce with threads as ranks, and how a generation
# formed in place plans its communicator.
muster_unit_test(runtime_comm_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/runtime_comm_types_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/runtime_comm_reduction_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/runtime_comm_solo_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/runtime_comm_shared_memory_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/runtime_comm_plan_test.cc
  LIBS muster_runtime_comm)

# Unit tests of the worker runtime's progress reports to the agent (a real
# pipe, a fake environment).
muster_unit_test(runtime_progress_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runtime_progress_test.cc
  LIBS muster_runtime_progress)

# The --inject faults a worker carries out (a fake environment, a temp file).
muster_unit_test(runtime_worker_faults_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runtime_worker_faults_test.cc
  LIBS muster_runtime_fault)

# The worker's end of the control channel (real pipes, a fake environment).
muster_unit_test(runtime_control_channel_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runtime_control_channel_test.cc
  LIBS muster_runtime_control)

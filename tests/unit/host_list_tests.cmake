# Unit tests of common/host_list.h: the cases of host_list_cases.txt (read at
# run time; the integration test host_list_scontrol checks the same file
# against SLURM's scontrol), the host limit, and FirstHostOfList's cost.
muster_unit_test(host_list_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/host_list_test.cc
  LIBS muster_host_list)
target_compile_definitions(host_list_tests PRIVATE
  MUSTER_HOST_LIST_CASES="${CMAKE_CURRENT_LIST_DIR}/host_list_cases.txt")
# common/printable.h: how terminals and log lines show untrusted strings.
muster_unit_test(printable_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/printable_test.cc
  LIBS muster_quote)

# Unit tests of the worker runtime's bootstrap: Context from torchrun or
# SLURM variables, through a fake environment.
muster_unit_test(runtime_bootstrap_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runtime_bootstrap_test.cc
  LIBS muster_runtime_bootstrap)

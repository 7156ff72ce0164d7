# muster-train's model pieces (worker_runtime/train): the CPU kernels.
muster_unit_test(runtime_train_unit_tests
  SOURCES runtime_train_kernels_test.cc
  LIBS muster_train)

# muster-train (worker_runtime/train): the CPU kernels, the sample order and
# split, the flags and a replica's share of an uneven split, and the resume
# agreement over the one-rank communicator (checkpoints in a temp directory).
muster_unit_test(runtime_train_unit_tests
  SOURCES
    runtime_train_kernels_test.cc
    runtime_train_sample_order_test.cc
    runtime_train_options_test.cc
    runtime_train_resume_test.cc
    runtime_train_live_state_test.cc
  LIBS muster_train)

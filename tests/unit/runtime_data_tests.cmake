# Unit tests of the worker runtime's data sharding (worker_runtime/data):
# DistributedSampler's order, padding, striding and mid-epoch resume.
muster_unit_test(runtime_data_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/runtime_sampler_test.cc
  LIBS muster_runtime_data)

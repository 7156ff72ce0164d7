# muster-train's GPU path (worker_runtime/train/gpu/) against its CPU
# reference: each CUDA kernel and cuBLAS product, and a GPU step against a
# CPU step. Built only where cmake/CudaSupport.cmake found CUDA and NCCL.
# Without a GPU the binary prints why and exits 77 (reported as skipped), so
# it is one registered test rather than discovered ones: discovery would run
# it at build time, where there may be no GPU either.
if(MUSTER_HAVE_NCCL)
  add_executable(runtime_train_gpu_tests ${CMAKE_CURRENT_LIST_DIR}/runtime_train_gpu_test.cc)
  target_link_libraries(runtime_train_gpu_tests PRIVATE Catch2::Catch2 muster_train_gpu)
  set_target_properties(runtime_train_gpu_tests PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME unit/runtime_train_gpu_tests COMMAND runtime_train_gpu_tests)
  set_tests_properties(unit/runtime_train_gpu_tests PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT 300
    LABELS "unit;train;gpu")
endif()

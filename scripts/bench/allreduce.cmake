# allreduce_bench_worker: one rank of the allreduce benchmark (allreduce.sh),
# timing the runtime's communicator. Included from scripts/bench/CMakeLists.txt.
add_executable(allreduce_bench_worker ${CMAKE_CURRENT_LIST_DIR}/allreduce_bench_worker.cc)
target_link_libraries(allreduce_bench_worker PRIVATE muster_runtime_comm muster_runtime_store
                                                     muster_runtime_bootstrap)
set_target_properties(allreduce_bench_worker PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

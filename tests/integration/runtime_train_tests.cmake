# The trainer end to end under muster: gradient averaging, DDP equivalence
# across world sizes, resume after a worker is killed (CPU, Gloo); the GPU
# path against the CPU path (skips where this build has no NCCL or no GPU is
# visible).
add_executable(runtime_grad_avg_main ${CMAKE_CURRENT_LIST_DIR}/runtime_grad_avg_main.cc)
target_link_libraries(runtime_grad_avg_main PRIVATE muster_train)
set_target_properties(runtime_grad_avg_main PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

muster_integration_test(runtime_train runtime_train_test.py TIMEOUT 600 LABELS train sanitize)
muster_integration_test(runtime_train_gpu runtime_train_gpu_test.py TIMEOUT 600 LABELS train gpu)
# An elastic muster-train job under musterd shrinking from 6 to 4 ranks and
# from 4 to 3 when a node is killed, ending with the fault-free weights.
muster_integration_test(runtime_train_elastic runtime_train_elastic_test.py TIMEOUT 300
                        LABELS train elastic)
# In-place recovery: a killed worker started alone, the survivors keep their
# processes and state, the fault-free weights; the fallbacks to restarting.
muster_integration_test(recovery_in_place recovery_in_place_test.py TIMEOUT 600
                        LABELS train sanitize)

# Unit tests of the launcher's pure logic: environment, GPU ids, launch plan,
# supervision state machine (fake spawner, fake time), output splitting and
# routing, report, root-cause error file, fault injection decisions (fake time),
# the worker store's admission and bounds.
muster_unit_test(launcher_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/launcher_worker_env_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_python_package_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_gpu_ids_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_launch_plan_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_launch_argv_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_output_routes_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_root_cause_file_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_worker_group_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_worker_group_in_place_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_line_splitter_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_console_stream_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_failure_report_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_command_check_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_output_tail_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_status_table_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_fault_injector_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_warm_fit_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_close_on_exec_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_static_follower_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_in_place_recovery_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_node_machine_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_run_directory_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_worker_store_host_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_worker_outputs_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_embedded_rendezvous_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_health_endpoint_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_fault_rehearsal_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_store_policy_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_health_verdict_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_hang_judge_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_hang_evidence_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_flight_recorder_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_straggler_watch_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/launcher_agent_metrics_test.cc
  LIBS muster_launcher)
# Whole runs of the agent over a fake spawner and a fake rendezvous: static
# restarts, recoveries in place and their fallback, elastic generations. No
# process; loopback only (the worker store listens there).
muster_unit_test(launcher_agent_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/launcher_agent_test.cc
  LIBS muster_launcher)

# Unit tests of the rendezvous state machine (rendezvous/state): every rule of
# RunState and RendezvousCore on a fake cluster with a hand-driven clock, rank
# assignment as a table, the status snapshot, a replica taking the lead, the
# daemon's answer to a Hello and its changes of lead, and the settings
# validation, the member addresses the master is sent, and step rates and
# stragglers. No sockets, no clocks.
muster_unit_test(rdzv_state_unit_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_round_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_membership_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_outcome_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_drain_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_rebuild_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_takeover_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_hello_gate_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_lead_change_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_settings_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_status_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_history_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_rank_assignment_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_member_addrs_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_step_rates_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_straggler_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_compute_stragglers_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_goodput_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_progress_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/rdzv_state_log_lines_test.cc
  LIBS muster_rdzv_state)

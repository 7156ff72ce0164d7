# The command-line syntax muster, `muster status` and musterd share
# (common/flag_match.h, option_parser.h, help_layout.h), musterd's flag table,
# and the endpoint `muster status` asks by default.
muster_unit_test(flag_syntax_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/flag_syntax_test.cc
  LIBS muster_flag_syntax
)
muster_unit_test(daemon_flags_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rdzv_daemon_flags_test.cc
  LIBS muster_daemon_flags
)
# It checks the man page's and the completion's generated parts in the tree.
target_compile_definitions(daemon_flags_tests PRIVATE MUSTER_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
muster_unit_test(status_endpoint_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/launcher_status_endpoint_test.cc
  LIBS muster_launcher
)

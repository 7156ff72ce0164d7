# muster_cli: command line, PET_ environment and --config file parsing.
muster_unit_test(cli_tests
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/cli_abbreviation_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/cli_accept_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/cli_config_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/cli_example_configs_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/cli_reject_tests.cc
    ${CMAKE_CURRENT_LIST_DIR}/cli_slurm_tests.cc
  LIBS muster_cli nlohmann_json::nlohmann_json
)
# The example-config tests read configs/ from the source tree.
target_compile_definitions(cli_tests PRIVATE MUSTER_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

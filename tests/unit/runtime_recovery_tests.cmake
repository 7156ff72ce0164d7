# The worker's side of in-place recovery (worker_runtime/recovery) against a
# fake agent: real pipes, a fake environment, one-rank communicators.
muster_unit_test(runtime_in_place_worker_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runtime_in_place_worker_test.cc
  LIBS muster_runtime_recovery)

# docs/runtime.md's in-place example, compiled as the page shows it (the
# ```cpp block after the "compiled: runtime_in_place_doc_example" marker)
# against the shared library a user links, and run as one process without
# muster: it trains and exits 0.
set(runtime_doc ${PROJECT_SOURCE_DIR}/docs/runtime.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${runtime_doc})
file(READ ${runtime_doc} runtime_doc_text)
set(runtime_doc_marker "<!-- compiled: runtime_in_place_doc_example -->\n```cpp\n")
string(FIND "${runtime_doc_text}" "${runtime_doc_marker}" runtime_doc_start)
if(runtime_doc_start EQUAL -1)
  message(FATAL_ERROR "docs/runtime.md: no ```cpp block after "
                      "<!-- compiled: runtime_in_place_doc_example -->")
endif()
string(LENGTH "${runtime_doc_marker}" runtime_doc_marker_length)
math(EXPR runtime_doc_start "${runtime_doc_start} + ${runtime_doc_marker_length}")
string(SUBSTRING "${runtime_doc_text}" ${runtime_doc_start} -1 runtime_doc_example)
string(FIND "${runtime_doc_example}" "\n```" runtime_doc_end)
string(SUBSTRING "${runtime_doc_example}" 0 ${runtime_doc_end} runtime_doc_example)
file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/runtime_in_place_doc_example.cc
     CONTENT "${runtime_doc_example}\n" @ONLY)
add_executable(runtime_in_place_doc_example
               ${CMAKE_CURRENT_BINARY_DIR}/runtime_in_place_doc_example.cc)
target_link_libraries(runtime_in_place_doc_example PRIVATE muster::runtime)
set_target_properties(runtime_in_place_doc_example PROPERTIES
                      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME unit/runtime_in_place_doc_example COMMAND runtime_in_place_doc_example)
set_tests_properties(unit/runtime_in_place_doc_example PROPERTIES LABELS unit)

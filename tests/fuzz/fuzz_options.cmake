# MUSTER_FUZZ: the libFuzzer targets of tests/fuzz (README.md there).
# Included by the top-level CMakeLists.txt before any component is added:
# the targets are only as good as the code they reach is instrumented, so
# every library is compiled with libFuzzer's coverage hooks and ASan+UBSan,
# not only the fuzz executables. Those link libFuzzer itself
# (-fsanitize=fuzzer, in tests/fuzz/CMakeLists.txt); the product binaries
# (muster, musterd, ...) still build, with ASan+UBSan and without a main
# from libFuzzer.
option(MUSTER_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only; instruments every target)" OFF)

if(MUSTER_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MUSTER_FUZZ=ON needs clang (libFuzzer ships with it), got "
                        "${CMAKE_CXX_COMPILER_ID}: configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(NOT "${MUSTER_SANITIZE}" STREQUAL "")
    message(FATAL_ERROR "MUSTER_FUZZ=ON brings its own sanitizers (ASan+UBSan); "
                        "leave MUSTER_SANITIZE empty, got '${MUSTER_SANITIZE}'")
  endif()
  # -fno-sanitize-recover: a UBSan finding aborts, so libFuzzer keeps the input.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()

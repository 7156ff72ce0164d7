#!/usr/bin/env bash
# Installs what is missing, builds muster and runs the whole test suite:
#   0. the Debian trixie and sid chroots whose real torch 2.6 and 2.14 the
#      torch integration tests launch (built once, kept; root only),
#   1. formatting check (.clang-format) of every C++ file,
#   2. the full suite (unit + integration) on the regular build in build/,
#   2b. the Release build (build-release/, warnings as errors) with its unit
#      tests, the .deb (scripts/package.sh), and the .deb installed and run in
#      a fresh Debian bookworm chroot (tests/packaging/deb_in_bookworm.sh;
#      skipped with the reason when not root),
#   3. unit, launcher and store integration tests again under ASan+UBSan (build-asan/),
#   4. the rendezvous unit tests and the elastic integration tests under TSan (build-tsan/),
#   5. every libFuzzer target (tests/fuzz/, clang, build-fuzz/) for
#      ${MUSTER_FUZZ_SECONDS:-30} s each, and each target over its regression inputs.
# Set MUSTER_SKIP_SANITIZERS=1 to skip steps 3 and 4, MUSTER_SKIP_FUZZ=1 step 5 (for quick
# local runs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/install-deps.sh

echo "== torch 2.6 and 2.14 chroots (scripts/torch_chroots.sh; skipped with the reason when not root)"
scripts/torch_chroots.sh

echo "== format check"
mapfile -t sources < <(git ls-files '*.cc' '*.h' '*.cu' 2>/dev/null || find . -name '*.cc' -o -name '*.h')
if ((${#sources[@]} > 0)); then
  clang-format --dry-run --Werror "${sources[@]}"
fi

echo "== build (build/)"
scripts/build.sh "$ROOT/build"

echo "== tests (build/)"
ctest --test-dir "$ROOT/build" --output-on-failure --parallel 2 --timeout 300

echo "== Release build (build-release/) and the Debian package (scripts/package.sh)"
DEB=$(scripts/package.sh "$ROOT/build/package" | tail -n 1)
echo "== unit tests of the Release build"
ctest --test-dir "$ROOT/build-release" --output-on-failure --parallel 2 --timeout 300 -L unit
echo "== $DEB in a fresh bookworm chroot (tests/packaging/deb_in_bookworm.sh)"
tests/packaging/deb_in_bookworm.sh "$DEB" || [[ $? == 77 ]]

if [[ "${MUSTER_SKIP_SANITIZERS:-0}" != "1" ]]; then
  echo "== build with ASan+UBSan (build-asan/)"
  scripts/build.sh "$ROOT/build-asan" -DMUSTER_SANITIZE=address -DMUSTER_CUDA=off
  echo "== tests under ASan+UBSan (unit, launcher and store integration)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$ROOT/build-asan" --output-on-failure --parallel 2 --timeout 300 -L 'unit|sanitize'

  echo "== build with TSan (build-tsan/): the daemon, the agent and the rendezvous tests"
  TSAN_TARGETS=(muster musterd rdzv_state_unit_tests rdzv_protocol_unit_tests rdzv_client_unit_tests
    rdzv_daemon_unit_tests rdzv_replica_unit_tests)
  if [[ ! -f "$ROOT/build-tsan/CMakeCache.txt" ]]; then
    cmake -S "$ROOT" -B "$ROOT/build-tsan" -G Ninja -DMUSTER_WERROR=ON -DMUSTER_SANITIZE=thread -DMUSTER_CUDA=off
  fi
  cmake --build "$ROOT/build-tsan" --parallel "$(nproc)" --target "${TSAN_TARGETS[@]}"
  echo "== tests under TSan (rendezvous unit tests, elastic integration)"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir "$ROOT/build-tsan" --output-on-failure --parallel 2 --timeout 400 \
    -R 'rdzv_|integration/elastic'
fi

if [[ "${MUSTER_SKIP_FUZZ:-0}" != "1" ]]; then
  echo "== fuzz targets (build-fuzz/: clang, libFuzzer+ASan+UBSan), ${MUSTER_FUZZ_SECONDS:-30} s each"
  if [[ ! -f "$ROOT/build-fuzz/CMakeCache.txt" ]]; then
    cmake -S "$ROOT" -B "$ROOT/build-fuzz" -G Ninja -DMUSTER_WERROR=ON -DCMAKE_CXX_COMPILER=clang++ \
      -DMUSTER_FUZZ=ON -DMUSTER_CUDA=off -DMUSTER_BUILD_TESTS=OFF
  fi
  cmake --build "$ROOT/build-fuzz" --parallel "$(nproc)" --target fuzzers
  tests/fuzz/run_fuzzers.sh "$ROOT/build-fuzz"
fi

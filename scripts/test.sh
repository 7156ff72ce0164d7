#!/usr/bin/env bash
# Installs what is missing, builds muster and runs the whole test suite, stage
# by stage (docs/testing.md says what each stage checks and how long it takes):
#
#   deps          scripts/install-deps.sh (only what is missing)
#   chroots       the Debian trixie and sid chroots whose real torch 2.6 and 2.14
#                 the torch integration tests launch (built once, kept; root only)
#   format        clang-format --dry-run --Werror over every C++ file
#   build         the regular build (build/)
#   suite         every test of build/ (unit, integration, chaos, package);
#                 the Release, ASan, TSan and fuzz builds start behind it,
#                 one after another at nice 19 (scripts/lib/build_chain.sh),
#                 and each "... build" stage below waits for its own
#   Release build the Release build (build-release/, as packaged)
#   Release unit  its unit tests
#   package       scripts/package.sh: the .deb from build-release/
#   .deb test     the .deb installed and run in a fresh Debian bookworm chroot
#                 (tests/packaging/deb_in_bookworm.sh; skipped with the reason
#                 when not root)
#   ASan build    build-asan/ (ASan+UBSan): everything, since its tests start
#                 nearly every program
#   ASan tests    unit, launcher, store, runtime and elastic integration under ASan+UBSan
#   TSan build    build-tsan/, only the targets its tests run
#   TSan tests    the rendezvous unit tests (TLS included) and integration/elastic under TSan
#   fuzz build    build-fuzz/ (clang, libFuzzer+ASan+UBSan)
#   fuzz          every libFuzzer target, ${MUSTER_FUZZ_TOTAL_SECONDS:-256} s split
#                 between them, over its regression inputs first (two at a time)
#
# A failed test stage does not stop the run: the other test stages still run
# (a failed install, format check or build does stop it), and the exit code is
# the first failed stage's. At its end, also after a failure or an interrupt,
# it prints a table of the stages with their wall times and the 15 slowest
# tests (ctest's own timing, from the JUnit files under build/test-timings/).
# A build stage's row also gives the build's own time and whether it was cold
# or warm (at least half of its compiles missed the compiler cache, or not);
# the table warns when a stage passes its budget, cold or warm, and when the
# total passes the run's (35 minutes when the regular build was cold, 15
# when it was warm; docs/testing.md, "The budget").
#
# Every build goes through ccache when it is installed (scripts/build.sh): the
# cache lives outside the clone, so a fresh clone on the same machine reuses it.
# The build logs of the background builds are under build/test-timings/builds/.
#
# Env: MUSTER_SKIP_SANITIZERS=1 skips the ASan and TSan stages, MUSTER_SKIP_FUZZ=1
# the fuzz stages (for quick local runs); MUSTER_CTEST_ARGS adds ctest
# arguments to the suite stage (e.g. "-L integration" or "-R elastic").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/stage_table.sh
source "$ROOT/scripts/lib/stage_table.sh"

# shellcheck source=scripts/lib/build_chain.sh
source "$ROOT/scripts/lib/build_chain.sh"

TIMINGS="$ROOT/build/test-timings"
# Budgets in seconds, cold (the compiler cache missed at least half of the
# regular build) and warm: docs/testing.md ("The budget"). The table warns
# when a stage, or the whole run, passes its own.
BUDGET_COLD_S=2100
BUDGET_WARM_S=900
# A background build's row is the time the run waited for it, not its own.
declare -A BUILD_BUDGET_COLD=([build]=420 ["Release build"]=120 ["ASan build"]=540 ["TSan build"]=120
  ["fuzz build"]=90)
declare -A BUILD_BUDGET_WARM=([build]=60 ["Release build"]=30 ["ASan build"]=30 ["TSan build"]=30
  ["fuzz build"]=30)
declare -A TEST_BUDGET=([suite]=720 ["ASan tests"]=180)
mkdir -p "$TIMINGS"
rm -f "$TIMINGS"/*.xml
stage_table_init "$TIMINGS" "$BUDGET_COLD_S"
stage_on_exit_hook() { build_chain_stop; }

stage_budget_of() {  # NAME: a test stage's budget, the same cold or warm
  stage_budget "$1" "${TEST_BUDGET[$1]}"
}

# The regular build, in the foreground: its cache verdict also decides
# which total budget the run is held to.
build_regular() {
  build_cache_start
  scripts/build.sh "$ROOT/build"
  local verdict
  verdict=$(build_cache_verdict)
  build_stage_verdict "$verdict" "$verdict"
  [[ $verdict == cold ]] || stage_total_budget "$BUDGET_WARM_S"
}
build_release() { scripts/package.sh --build-only; }
build_asan() {
  scripts/build.sh "$ROOT/build-asan" -DMUSTER_SANITIZE=address -DMUSTER_CUDA=off
}
build_tsan() {
  scripts/build.sh "$ROOT/build-tsan" -DMUSTER_SANITIZE=thread -DMUSTER_CUDA=off \
    --target "${TSAN_TARGETS[@]}"
}
build_fuzz() {
  scripts/build.sh "$ROOT/build-fuzz" -DCMAKE_CXX_COMPILER=clang++ -DMUSTER_FUZZ=ON \
    -DMUSTER_CUDA=off -DMUSTER_BUILD_TESTS=OFF --target fuzzers
}

run_ctest() {  # BUILD_DIR TIMINGS_NAME [ctest arguments...]
  local dir=$1 name=$2
  shift 2
  ctest --test-dir "$dir" --output-on-failure --output-junit "$TIMINGS/$name.xml" "$@"
}

format_check() {
  local sources
  mapfile -t sources < <(git ls-files '*.cc' '*.h' '*.cu' 2>/dev/null || find . -name '*.cc' -o -name '*.h')
  if ((${#sources[@]} > 0)); then
    clang-format --dry-run --Werror "${sources[@]}"
  fi
}

package_deb() {  # the .deb's path is package.sh's last line
  scripts/package.sh "$ROOT/build/package" | tee "$TIMINGS/package.out"
}

deb_test() {  # exits 77 (SKIP) when not root
  tests/packaging/deb_in_bookworm.sh "$(tail -n 1 "$TIMINGS/package.out")"
}

# The out-of-descriptors tests run in the suite, not here: UBSan checks a
# virtual call's type by probing memory through a pipe(2), which fails in a
# process with no descriptor left, and it then reports a false "invalid vptr".
ASAN_EXCLUDED='out of descriptors'
asan_tests() {  # the unit tests and the integration tests labelled sanitize
  echo "asan: not run here, as UBSan's type check needs a free descriptor: tests named '$ASAN_EXCLUDED'"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest "$ROOT/build-asan" asan --parallel 2 --timeout 300 -L 'unit|sanitize' \
    -E "$ASAN_EXCLUDED"
}

# The TSan stage: the daemon, the agent, every rendezvous unit test and
# integration/elastic, which starts the first two. The unit tests are read
# from tests/unit/*.cmake, so that a new rdzv_ test is built for the stage
# that runs it (ctest -R 'rdzv_' would otherwise find a placeholder).
mapfile -t RDZV_UNIT_TESTS < <(sed -n 's/^muster_unit_test(\(rdzv_[a-z0-9_]*\).*/\1/p' \
  "$ROOT"/tests/unit/*.cmake)
TSAN_TARGETS=(muster musterd "${RDZV_UNIT_TESTS[@]}")
tsan_tests() {
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    run_ctest "$ROOT/build-tsan" tsan --parallel 2 --timeout 400 -R 'rdzv_|integration/elastic'
}

stage deps scripts/install-deps.sh
stage chroots scripts/torch_chroots.sh
stage format format_check
stage build build_regular

# The later builds run behind the suite, in one chain at nice 19
# (scripts/lib/build_chain.sh): the suite keeps its CPU, the builds take
# what it leaves idle, and each later stage waits for its own build.
CHAIN=(release)
[[ "${MUSTER_SKIP_SANITIZERS:-0}" == "1" ]] || CHAIN+=(asan tsan)
[[ "${MUSTER_SKIP_FUZZ:-0}" == "1" ]] || CHAIN+=(fuzz)
build_chain_start "$TIMINGS/builds" "${CHAIN[@]}"

# shellcheck disable=SC2086  # MUSTER_CTEST_ARGS is split on purpose
stage --keep-going suite run_ctest "$ROOT/build" suite --parallel 2 --timeout 300 ${MUSTER_CTEST_ARGS:-}
stage_budget_of suite

stage "Release build" build_chain_await release
stage --keep-going "Release unit" run_ctest "$ROOT/build-release" release-unit --parallel 2 --timeout 300 -L unit
stage package package_deb
stage --keep-going ".deb test" deb_test

if [[ "${MUSTER_SKIP_SANITIZERS:-0}" != "1" ]]; then
  stage "ASan build" build_chain_await asan
  stage --keep-going "ASan tests" asan_tests
  stage_budget_of "ASan tests"
  stage "TSan build" build_chain_await tsan
  stage --keep-going "TSan tests" tsan_tests
fi

if [[ "${MUSTER_SKIP_FUZZ:-0}" != "1" ]]; then
  stage "fuzz build" build_chain_await fuzz
  stage --keep-going fuzz env MUSTER_FUZZ_JOBS=2 tests/fuzz/run_fuzzers.sh "$ROOT/build-fuzz"
fi

stage_table_finish

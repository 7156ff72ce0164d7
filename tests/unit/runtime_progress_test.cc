// ProgressReporter: one decimal line per report on the agent's pipe, never
// blocking, and nothing at all without a pipe.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "tests/unit/launcher_test_support.h"
#include "tests/unit/runtime_pipe_test_support.h"
#include "worker_runtime/progress/progress_reporter.h"

namespace muster::runtime {
namespace {

using muster::testing::EnvOf;
using muster::testing::Pipe;

TEST_CASE("reports are one decimal step per line on the named pipe") {
  Pipe pipe;
  auto reporter =
      ProgressReporter::FromEnv(EnvOf({{"MUSTER_PROGRESS_FD", std::to_string(pipe.write_end)}}));
  REQUIRE(reporter.enabled());
  reporter.Report(1);
  reporter.Report(1234567890123);
  CHECK(pipe.Drain() == "1\n1234567890123\n");
}

TEST_CASE("a full pipe drops reports instead of blocking the worker") {
  Pipe pipe;
  auto reporter =
      ProgressReporter::FromEnv(EnvOf({{"MUSTER_PROGRESS_FD", std::to_string(pipe.write_end)}}));
  REQUIRE(reporter.enabled());
  for (int i = 0; i < 100000; ++i) reporter.Report(i);  // far beyond a pipe's 64 KiB
  CHECK_FALSE(pipe.Drain().empty());
}

TEST_CASE("no pipe, a bad value or a descriptor that is not a pipe means no reports") {
  CHECK_FALSE(ProgressReporter::FromEnv(EnvOf({})).enabled());
  CHECK_FALSE(ProgressReporter::FromEnv(EnvOf({{"MUSTER_PROGRESS_FD", "x"}})).enabled());
  CHECK_FALSE(ProgressReporter::FromEnv(EnvOf({{"MUSTER_PROGRESS_FD", "999999"}})).enabled());
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  CHECK_FALSE(
      ProgressReporter::FromEnv(EnvOf({{"MUSTER_PROGRESS_FD", std::to_string(fileno(file))}}))
          .enabled());
  std::fclose(file);
  ProgressReporter().Report(5);  // harmless
}

}  // namespace
}  // namespace muster::runtime

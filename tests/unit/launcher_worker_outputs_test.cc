// WorkerOutputs: each worker's output lands where its routes say (here:
// files, --redirects 3), streams are counted closed, a survivor that rejoins
// writes as its new rank, and the stderr tails outlive the routes for the
// failure report. Real files under a private temporary directory.
#include "launcher/output/worker_outputs.h"

#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace muster {
namespace {
namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

WorkerSpec Spec(int local_rank, int global_rank) {
  WorkerSpec spec;
  spec.local_rank = local_rank;
  spec.global_rank = global_rank;
  spec.request.tag = WorkerGroup::MakeTag(0, local_rank);
  return spec;
}

TEST_CASE("each worker's output goes to its files, and its stderr tail outlives them",
          "[worker-outputs]") {
  std::string pattern = (fs::temp_directory_path() / "muster-outputs-test-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  const fs::path dir = pattern;
  boost::asio::io_context io;
  LaunchOptions options;
  options.redirects.all = kStdAll;
  options.prefix_output = true;
  WorkerOutputs outputs(io, options);
  const std::string attempt = (dir / "attempt_0").string();
  fs::create_directories(attempt + "/0");
  fs::create_directories(attempt + "/1");
  REQUIRE(outputs.Open({Spec(0, 4), Spec(1, 5)}, attempt).ok());
  const uint64_t first = WorkerGroup::MakeTag(0, 0);
  const uint64_t second = WorkerGroup::MakeTag(0, 1);

  outputs.Write(first, Stream::kStdout, "step 1\n");
  outputs.Write(second, Stream::kStderr, "Traceback\n");
  outputs.SetRank(first, 7);
  outputs.Write(first, Stream::kStdout, "step 2\n");
  CHECK(outputs.StderrTail(second) == std::optional<std::string_view>("Traceback\n"));
  CHECK_FALSE(outputs.StderrTail(first).has_value());

  outputs.Closed(first, Stream::kStdout);
  outputs.Closed(first, Stream::kStderr);
  CHECK_FALSE(outputs.all_closed());
  std::vector<uint64_t> stopped;
  outputs.CloseAll([&](uint64_t tag) { stopped.push_back(tag); });
  CHECK(outputs.all_closed());
  CHECK(stopped == std::vector<uint64_t>{first, second});

  // Files hold the worker's bytes as written; the rank prefix is the
  // console's (below).
  CHECK(ReadFile(attempt + "/0/stdout.log") == "step 1\nstep 2\n");
  CHECK(ReadFile(attempt + "/1/stderr.log") == "Traceback\n");
  // The tails stay for the report until the next attempt clears them.
  CHECK(outputs.StderrTail(second).has_value());
  outputs.Clear();
  CHECK_FALSE(outputs.StderrTail(second).has_value());
  fs::remove_all(dir);
}

TEST_CASE("on the console each line names its rank, the new one after a rejoin",
          "[worker-outputs]") {
  // This process's stdout goes to a file for the test's length.
  std::string pattern = (fs::temp_directory_path() / "muster-console-test-XXXXXX").string();
  const int file = mkstemp(pattern.data());
  REQUIRE(file >= 0);
  std::fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  REQUIRE(dup2(file, STDOUT_FILENO) == STDOUT_FILENO);
  {
    boost::asio::io_context io;
    LaunchOptions options;
    options.prefix_output = true;
    WorkerOutputs outputs(io, options);
    REQUIRE(outputs.Open({Spec(0, 4)}, "/nonexistent-attempt-dir").ok());
    const uint64_t tag = WorkerGroup::MakeTag(0, 0);
    outputs.Write(tag, Stream::kStdout, "step 1\n");
    // The survivor rejoins in place as rank 7: its next lines say so.
    outputs.SetRank(tag, 7);
    outputs.Write(tag, Stream::kStdout, "step 2\n");
    outputs.CloseAll([](uint64_t) {});
  }
  dup2(saved, STDOUT_FILENO);
  close(saved);
  close(file);
  CHECK(ReadFile(pattern) == "[rank4]: step 1\n[rank7]: step 2\n");
  fs::remove(pattern);
}

}  // namespace
}  // namespace muster

// Where worker output goes (--redirects, --tee, --local-ranks-filter,
// --log-dir) and the filtered copies of --duplicate-std{out,err}-filters.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "launcher/output/output_routes.h"
#include "tests/unit/temp_files.h"

using namespace muster;
using muster::testing::ReadFile;
using muster::testing::TempDir;

namespace {}  // namespace

TEST_CASE("a plain run shows every stream on the console and keeps no file", "[routes]") {
  const WorkerRoutes r = RoutesFor(LaunchOptions{}, 0, "/d/0", FilteredCopies{});
  CHECK(r.out.to_console);
  CHECK(r.err.to_console);
  CHECK(r.out.file_path.empty());
  CHECK(r.err.file_path.empty());
}

TEST_CASE("redirects keep a stream off the console, tee keeps it on, both write files",
          "[routes]") {
  LaunchOptions o;
  o.redirects.per_rank[0] = kStdOut;
  o.tee.per_rank[1] = kStdErr;
  const WorkerRoutes r0 = RoutesFor(o, 0, "/d/0", FilteredCopies{});
  CHECK_FALSE(r0.out.to_console);
  CHECK(r0.out.file_path == "/d/0/stdout.log");
  CHECK(r0.err.to_console);
  CHECK(r0.err.file_path.empty());
  const WorkerRoutes r1 = RoutesFor(o, 1, "/d/1", FilteredCopies{});
  CHECK(r1.err.to_console);
  CHECK(r1.err.file_path == "/d/1/stderr.log");
}

TEST_CASE("with --log-dir every stream is kept in a file", "[routes]") {
  LaunchOptions o;
  o.log_dir = "/logs";
  const WorkerRoutes r = RoutesFor(o, 2, "/d/2", FilteredCopies{});
  CHECK(r.out.file_path == "/d/2/stdout.log");
  CHECK(r.err.file_path == "/d/2/stderr.log");
  CHECK(r.out.to_console);
}

TEST_CASE("only tee'd streams shown on the console feed the filtered copies, as torchrun",
          "[routes]") {
  TempDir dir("routes_test");
  LaunchOptions o;
  o.duplicate_stdout_filters = {"loss"};
  o.tee.all = kStdOut;
  o.local_ranks_filter = std::vector<int>{0, 1};
  auto copies = OpenFilteredCopies(o, dir.path);
  REQUIRE(copies.ok());
  REQUIRE(copies->out);
  CHECK_FALSE(copies->err);  // no stderr filters: no file
  CHECK(std::filesystem::exists(dir.path + "/filtered_stdout.log"));
  CHECK(RoutesFor(o, 0, "/d/0", *copies).out.filtered_copy == copies->out);
  CHECK_FALSE(RoutesFor(o, 0, "/d/0", *copies).err.filtered_copy);
  CHECK_FALSE(RoutesFor(o, 2, "/d/2", *copies).out.filtered_copy);  // filtered off the console
  o.tee.all = kStdNone;
  CHECK_FALSE(RoutesFor(o, 0, "/d/0", *copies).out.filtered_copy);  // not tee'd
}

TEST_CASE("a filter matches a line that contains it anywhere", "[routes]") {
  const std::vector<std::string> filters = {"loss", "a,b"};
  CHECK(FilteredCopy::Matches(filters, "step 3 loss=0.1\n"));
  CHECK(FilteredCopy::Matches(filters, "xa,by\n"));
  CHECK_FALSE(FilteredCopy::Matches(filters, "step 3 LOSS=0.1\n"));  // case matters
  CHECK_FALSE(FilteredCopy::Matches({}, "anything\n"));
}

TEST_CASE("workers' matching lines land whole and prefixed in one filtered file", "[routes]") {
  TempDir dir("routes_test");
  auto copy = FilteredCopy::Open(dir.path + "/filtered_stdout.log", {"loss"});
  REQUIRE(copy.ok());
  // A filtered copy is fed the lines shown on the console (tee'd streams).
  StreamRoute out{true, "", *copy};
  StreamRoute err{false, "", nullptr};
  auto rank0 = WorkerOutput::Open("[rank0]: ", out, err);
  auto rank1 = WorkerOutput::Open("[rank1]: ", out, err);
  REQUIRE(rank0.ok());
  REQUIRE(rank1.ok());
  (*rank0)->Write(Stream::kStdout, "step 1 lo");
  (*rank1)->Write(Stream::kStdout, "step 1 loss=2\nnoise\n");
  (*rank0)->Write(Stream::kStdout, "ss=3\nnoise\nlast loss");  // no newline at the end
  (*rank0)->Close(Stream::kStdout);
  (*rank1)->Close(Stream::kStdout);
  copy->reset();
  rank0->reset();
  rank1->reset();
  CHECK(ReadFile(dir.path + "/filtered_stdout.log") ==
        "[rank1]: step 1 loss=2\n[rank0]: step 1 loss=3\n[rank0]: last loss\n");
}

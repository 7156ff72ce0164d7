// RunDirectory: a directory of its own per run under --log-dir, kept; a
// temporary one without it, removed at the end unless it holds files the user
// asked for. Real directories under a private temporary one.
#include "launcher/agent/run_directory.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

namespace muster {
namespace {
namespace fs = std::filesystem;

// A private directory for one test, removed when it ends.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "muster-run-dir-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST_CASE("under --log-dir each run gets a directory of its own, kept", "[run-directory]") {
  Scratch scratch;
  LaunchOptions options;
  options.log_dir = (scratch.path() / "logs" / "deeper").string();  // created as needed
  std::string first_path;
  {
    auto first = RunDirectory::Create(options, "job7");
    REQUIRE(first.ok());
    auto second = RunDirectory::Create(options, "job7");
    REQUIRE(second.ok());
    first_path = first->path();
    CHECK(fs::path(first_path).parent_path() == fs::path(options.log_dir));
    CHECK(fs::path(first_path).filename().string().starts_with("job7_"));
    CHECK(first->path() != second->path());
    CHECK(first->kept());
    CHECK(first->AttemptDir(2) == first_path + "/attempt_2");
  }
  CHECK(fs::is_directory(first_path));
}

TEST_CASE("without --log-dir the directory is removed at the end, unless output goes to files",
          "[run-directory]") {
  LaunchOptions options;
  std::string path;
  {
    auto directory = RunDirectory::Create(options, "job8");
    REQUIRE(directory.ok());
    path = directory->path();
    CHECK(fs::path(path).filename().string().starts_with("muster-job8-"));
    CHECK_FALSE(directory->kept());
    fs::create_directories(directory->AttemptDir(0) + "/0");
    // Moved, it is removed once, by its last owner.
    RunDirectory moved = std::move(directory).value();
    CHECK(fs::is_directory(path));
  }
  CHECK_FALSE(fs::exists(path));

  options.redirects.all = true;
  {
    auto directory = RunDirectory::Create(options, "job9");
    REQUIRE(directory.ok());
    path = directory->path();
    CHECK(directory->kept());
  }
  CHECK(fs::is_directory(path));
  fs::remove_all(path);
}

TEST_CASE("a --log-dir that cannot be created is an error naming it", "[run-directory]") {
  Scratch scratch;
  const fs::path file = scratch.path() / "a-file";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fclose(f);
  }
  LaunchOptions options;
  options.log_dir = (file / "logs").string();
  auto directory = RunDirectory::Create(options, "job");
  REQUIRE_FALSE(directory.ok());
  CHECK_THAT(directory.status().message(),
             Catch::StartsWith("--log-dir: cannot create '" + options.log_dir + "'"));
}

}  // namespace
}  // namespace muster

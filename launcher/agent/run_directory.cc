#include "launcher/agent/run_directory.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace muster {
namespace fs = std::filesystem;

Result<RunDirectory> RunDirectory::Create(const LaunchOptions& options, const std::string& run_id) {
  std::error_code ec;
  if (!options.log_dir.empty()) {
    fs::create_directories(options.log_dir, ec);
    if (ec) {
      return Status::IoError("--log-dir: cannot create '" + options.log_dir + "': " + ec.message());
    }
    std::string pattern = (fs::path(options.log_dir) / (run_id + "_XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return Status::IoError("--log-dir: cannot create a run directory in '" + options.log_dir +
                             "': " + std::strerror(errno));
    }
    spdlog::info("worker logs in {}", pattern);
    return RunDirectory(std::move(pattern), /*remove_at_end=*/false);
  }
  // Error files (and redirected output) need a home even without --log-dir.
  std::string pattern = (fs::temp_directory_path(ec) / ("muster-" + run_id + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::IoError("cannot create a run directory under '" +
                           fs::temp_directory_path(ec).string() + "'");
  }
  const bool keeps_files = options.redirects.all || options.tee.all ||
                           !options.redirects.per_rank.empty() || !options.tee.per_rank.empty();
  // Files nobody named a place for: the user must learn where they are.
  if (keeps_files) spdlog::warn("worker logs in {} (--redirects/--tee without --log-dir)", pattern);
  return RunDirectory(std::move(pattern), /*remove_at_end=*/!keeps_files);
}

RunDirectory::RunDirectory(RunDirectory&& other) noexcept
    : path_(std::exchange(other.path_, {})), remove_at_end_(other.remove_at_end_) {}

RunDirectory& RunDirectory::operator=(RunDirectory&& other) noexcept {
  if (this != &other) {
    RunDirectory old(std::move(*this));  // removed as it goes, if it should be
    path_ = std::exchange(other.path_, {});
    remove_at_end_ = other.remove_at_end_;
  }
  return *this;
}

RunDirectory::~RunDirectory() {
  if (remove_at_end_ && !path_.empty()) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
}

std::string RunDirectory::AttemptDir(int attempt) const {
  return path_ + "/attempt_" + std::to_string(attempt);
}

}  // namespace muster

#include "worker_runtime/checkpoint/checkpoint_directory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/decimal.h"

namespace muster::runtime {
namespace {

constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kSuffix = ".mck";
constexpr size_t kStepDigits = 12;
constexpr std::string_view kTempMarker = ".tmp-";

}  // namespace

std::string CheckpointFileName(uint64_t step) {
  std::string digits = std::to_string(step);
  if (digits.size() < kStepDigits) digits.insert(0, kStepDigits - digits.size(), '0');
  return std::string(kPrefix) + digits + std::string(kSuffix);
}

std::optional<uint64_t> ParseCheckpointFileName(std::string_view name) {
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  const std::string_view digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  // At least the padded width, so "ckpt-1.mck" (not ours) is not mistaken for step 1.
  if (digits.size() < kStepDigits) return std::nullopt;
  return ParseDecimal(digits);
}

std::string CheckpointTempFileName(uint64_t step, std::string_view suffix) {
  std::string name = ".";  // appended, not "." + ...: GCC 12 -O3 warns (false -Wrestrict)
  name += CheckpointFileName(step);
  name += kTempMarker;
  name += suffix;
  return name;
}

bool IsCheckpointTempFileName(std::string_view name) {
  if (!name.starts_with('.')) return false;
  const size_t marker = name.find(kTempMarker);
  if (marker == std::string_view::npos) return false;
  return ParseCheckpointFileName(name.substr(1, marker - 1)).has_value();
}

Result<std::vector<CheckpointFile>> ListCheckpointFiles(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::directory_iterator entries(dir, error);
  if (error == std::errc::no_such_file_or_directory) return std::vector<CheckpointFile>{};
  if (error) {
    return Status::IoError("checkpoint dir '" + dir + "': cannot list: " + error.message());
  }
  std::vector<CheckpointFile> files;
  // increment(error) instead of a range-for: the latter throws on I/O errors.
  for (; entries != fs::directory_iterator(); entries.increment(error)) {
    const fs::directory_entry& entry = *entries;
    const std::optional<uint64_t> step = ParseCheckpointFileName(entry.path().filename().string());
    std::error_code type_error;
    if (step && entry.is_regular_file(type_error)) {
      files.push_back(CheckpointFile{*step, entry.path().string()});
    }
  }
  if (error) {
    return Status::IoError("checkpoint dir '" + dir + "': cannot list: " + error.message());
  }
  std::sort(files.begin(), files.end(),
            [](const CheckpointFile& a, const CheckpointFile& b) { return a.step > b.step; });
  return files;
}

Result<std::vector<RemovalFailure>> RemoveCheckpointTempFiles(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::directory_iterator entries(dir, error);
  if (error == std::errc::no_such_file_or_directory) return std::vector<RemovalFailure>{};
  if (error) {
    return Status::IoError("checkpoint dir '" + dir + "': cannot list: " + error.message());
  }
  // Collected first: removing entries while iterating leaves it unspecified
  // whether the iterator still visits the others.
  std::vector<std::string> stale;
  for (; entries != fs::directory_iterator(); entries.increment(error)) {
    if (IsCheckpointTempFileName(entries->path().filename().string())) {
      stale.push_back(entries->path().string());
    }
  }
  if (error) {
    return Status::IoError("checkpoint dir '" + dir + "': cannot list: " + error.message());
  }
  std::vector<RemovalFailure> failures;
  for (const std::string& path : stale) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      failures.push_back(RemovalFailure{path, std::strerror(errno)});
    }
  }
  return failures;
}

Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return Status::IoError("checkpoint dir '" + dir + "': open for fsync: " + std::strerror(errno));
  }
  const int synced = ::fsync(fd);
  const int sync_errno = errno;
  ::close(fd);
  if (synced != 0) {
    return Status::IoError("checkpoint dir '" + dir + "': fsync: " + std::strerror(sync_errno));
  }
  return Status::Ok();
}

}  // namespace muster::runtime

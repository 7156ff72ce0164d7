#include "worker_runtime/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "worker_runtime/checkpoint/checkpoint_codec.h"
#include "worker_runtime/checkpoint/checkpoint_directory.h"

namespace muster::runtime {
namespace {

std::string PathError(const std::string& path, const char* what) {
  return "'" + path + "': " + what + ": " + std::strerror(errno);
}

// Opens a temp file next to the final one. The name carries the pid and a
// counter; O_EXCL and a retry cover a clash with another host's process on a
// shared file system. Mode 0666 lets the umask decide, as for any new file.
Result<std::pair<int, std::string>> CreateTempFile(const std::string& dir, uint64_t step) {
  static std::atomic<uint64_t> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string path =
        (std::filesystem::path(dir) /
         CheckpointTempFileName(step, std::to_string(::getpid()) + "-" + std::to_string(counter++)))
            .string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return std::make_pair(fd, path);
    if (errno != EEXIST) return Status::IoError(PathError(path, "create"));
  }
  return Status::IoError("checkpoint dir '" + dir + "': no unused temp file name");
}

// Writes, syncs and closes the temp file; the caller removes it on failure.
Status WriteTempFile(int fd, const std::string& path, const Checkpoint& ckpt) {
  Status encoded = EncodeCheckpoint(fd, ckpt);
  if (!encoded.ok()) {
    ::close(fd);
    return Status::IoError("'" + path + "': " + encoded.message());
  }
  if (::fsync(fd) != 0) {
    Status error = Status::IoError(PathError(path, "fsync"));
    ::close(fd);
    return error;
  }
  // close can report a deferred write error (NFS), so it is checked too.
  if (::close(fd) != 0) return Status::IoError(PathError(path, "close"));
  return Status::Ok();
}

// Temp files of earlier writes that crashed before their rename would
// otherwise pile up across restarts. With one writer per directory none of
// them belongs to a write in progress. Leftovers only cost space: logged.
void RemoveStaleTempFiles(const std::string& dir) {
  Result<std::vector<RemovalFailure>> failures = RemoveCheckpointTempFiles(dir);
  if (!failures.ok()) {
    spdlog::warn("checkpoint temp cleanup skipped dir={} reason={}", dir,
                 failures.status().message());
    return;
  }
  for (const RemovalFailure& failure : *failures) {
    spdlog::warn("checkpoint temp file not removed file={} reason={}", failure.path,
                 failure.reason);
  }
}

// Keeps the newest `keep_last` files; `written` survives regardless, so an
// older step written after newer ones is not deleted the moment it lands.
void PruneOldCheckpoints(const std::string& dir, const std::string& written, int keep_last) {
  Result<std::vector<CheckpointFile>> files = ListCheckpointFiles(dir);
  if (!files.ok()) {
    spdlog::warn("checkpoint prune skipped dir={} reason={}", dir, files.status().message());
    return;
  }
  size_t kept = 0;
  for (const CheckpointFile& file : *files) {
    if (file.path == written || kept < static_cast<size_t>(keep_last)) {
      ++kept;
      continue;
    }
    if (::unlink(file.path.c_str()) != 0 && errno != ENOENT) {
      // The new checkpoint is already durable; a stale old one only costs space.
      spdlog::warn("checkpoint prune failed file={} reason={}", file.path, std::strerror(errno));
    }
  }
}

Result<Checkpoint> ReadCheckpointFile(const CheckpointFile& file) {
  const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(std::string("open: ") + std::strerror(errno));
  Result<Checkpoint> ckpt = DecodeCheckpoint(fd);
  ::close(fd);
  if (!ckpt.ok()) return ckpt;
  // A renamed file would otherwise be ranked by a step it does not hold.
  if (ckpt->step != file.step) {
    return Status::InvalidArgument("holds step " + std::to_string(ckpt->step) +
                                   " but is named for step " + std::to_string(file.step));
  }
  return ckpt;
}

}  // namespace

Status WriteCheckpoint(const std::string& dir, const Checkpoint& ckpt, int keep_last) {
  if (keep_last < 1) {
    return Status::InvalidArgument("keep_last=" + std::to_string(keep_last) +
                                   " must be at least 1");
  }
  std::error_code created_error;
  std::filesystem::create_directories(dir, created_error);
  if (created_error) {
    return Status::IoError("checkpoint dir '" + dir + "': create: " + created_error.message());
  }

  RemoveStaleTempFiles(dir);
  Result<std::pair<int, std::string>> temp = CreateTempFile(dir, ckpt.step);
  if (!temp.ok()) return temp.status();
  const auto& [fd, temp_path] = *temp;
  const std::string final_path =
      (std::filesystem::path(dir) / CheckpointFileName(ckpt.step)).string();

  Status written = WriteTempFile(fd, temp_path, ckpt);
  if (written.ok() && ::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    written = Status::IoError(PathError(final_path, "rename from temp file"));
  }
  if (!written.ok()) {
    ::unlink(temp_path.c_str());
    return written;
  }
  // Without this the rename may be lost in a crash even though the data is not.
  if (Status synced = SyncDirectory(dir); !synced.ok()) return synced;

  PruneOldCheckpoints(dir, final_path, keep_last);
  return Status::Ok();
}

Result<std::optional<Checkpoint>> LoadNewestCheckpoint(const std::string& dir) {
  Result<std::vector<CheckpointFile>> files = ListCheckpointFiles(dir);
  if (!files.ok()) return files.status();
  for (const CheckpointFile& file : *files) {
    Result<Checkpoint> ckpt = ReadCheckpointFile(file);
    if (ckpt.ok()) return std::optional<Checkpoint>(std::move(ckpt).value());
    spdlog::warn("checkpoint skipped file={} reason={}", file.path, ckpt.status().message());
  }
  return std::optional<Checkpoint>();
}

}  // namespace muster::runtime

// Names and listing of the checkpoint files in one directory (layout in
// checkpoint.h), plus the directory fsync that makes a rename durable.
//
// Thread-safety: pure functions of their arguments and the file system.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::runtime {

// "ckpt-000000000042.mck" for step 42; more digits past 10^12 - 1.
std::string CheckpointFileName(uint64_t step);

// The step in a final checkpoint name; nullopt for any other name (temp
// files, foreign files, a step that overflows 64 bits).
std::optional<uint64_t> ParseCheckpointFileName(std::string_view name);

// ".ckpt-000000000042.mck.tmp-<suffix>": where a write of `step` puts its
// bytes before the rename. `suffix` tells concurrent writes apart.
std::string CheckpointTempFileName(uint64_t step, std::string_view suffix);

// Whether `name` is a temp file of some checkpoint write, i.e. what
// CheckpointTempFileName returns for some step and suffix.
bool IsCheckpointTempFileName(std::string_view name);

struct CheckpointFile {
  uint64_t step = 0;
  std::string path;
};

// The final-named regular files in `dir`, highest step first; contents are
// not checked. A missing `dir` yields an empty list.
// Errors: IoError naming `dir` when it exists but cannot be listed.
Result<std::vector<CheckpointFile>> ListCheckpointFiles(const std::string& dir);

struct RemovalFailure {
  std::string path;
  std::string reason;  // the system's
};

// Removes every checkpoint temp file in `dir` (IsCheckpointTempFileName) and
// returns the ones it could not remove; other names are left alone.
// REQUIRES: no write to `dir` is in progress (one writer per directory),
// since that write's temp file would be removed too.
// Errors: IoError naming `dir` when it exists but cannot be listed; a
// missing `dir` has nothing to remove.
Result<std::vector<RemovalFailure>> RemoveCheckpointTempFiles(const std::string& dir);

// Makes the directory's entries (a rename, a new file) durable.
// Errors: IoError naming `dir` and the system's reason.
Status SyncDirectory(const std::string& dir);

}  // namespace muster::runtime

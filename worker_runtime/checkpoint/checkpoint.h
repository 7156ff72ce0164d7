// Checkpoints: a trainer's state written atomically to a directory and read
// back after a restart, newest valid one first.
//
// Files in the directory:
//   ckpt-<step, zero-padded to 12 digits>.mck   a complete checkpoint
//   .ckpt-<step>.mck.tmp-<pid>-<n>              a write in progress (ignored)
// A checkpoint only appears under its final name once its bytes are on disk
// (temp file, fsync, rename, fsync of the directory), so a crash leaves either
// the previous set of checkpoints or the new one, plus possibly a temp file,
// which the next WriteCheckpoint to the directory removes.
//
// File format, version 1. Integers are unsigned little-endian; offsets in bytes.
//    0   8  magic "MSTRCKPT"
//    8   4  format version (1)
//   12   8  total file length, checksum included
//   20   8  step
//   28   8  epoch
//   36   8  sampler_position
//   44   8  metadata length M, then M bytes of metadata
//        8  tensor count T, then T times:
//             8  name length L, then L bytes of name
//             8  element count E, then E float32 values (IEEE 754, LE)
//        4  CRC-32C of every byte before it
// A reader rejects a file whose length field differs from its size (torn
// write), whose checksum differs (corruption), or whose lengths point past the
// bytes that remain (so a corrupt length cannot trigger a huge allocation).
//
// Thread-safety: the functions share no state; two writers must not use the
// same directory at once (rank 0 writes, as a rule).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace muster::runtime {

struct Checkpoint {
  uint64_t step = 0;
  uint64_t epoch = 0;
  uint64_t sampler_position = 0;  // SamplerState::global_position
  std::string metadata;           // JSON text, e.g. the trainer's flags
  // Model and optimizer state, in order. Names need not be unique.
  std::vector<std::pair<std::string, std::vector<float>>> tensors;

  bool operator==(const Checkpoint&) const = default;
};

// Writes `ckpt` to dir/ckpt-<step>.mck atomically, creating `dir` if missing
// and replacing a checkpoint of the same step. Before writing, removes the
// temp files that crashed writes left behind (with one writer per directory
// none is in progress). After writing, removes the oldest checkpoints so
// that at most `keep_last` remain; the one just written is never removed.
// A failed removal of either kind is only logged.
// Errors (the previous checkpoints are left intact, the temp file removed):
// InvalidArgument when keep_last < 1; IoError naming the path and the
// system's reason.
Status WriteCheckpoint(const std::string& dir, const Checkpoint& ckpt, int keep_last = 2);

// Returns the valid checkpoint with the highest step in `dir`, or nullopt when
// `dir` does not exist or holds no valid checkpoint. Each invalid file met
// on the way (torn, corrupt, unreadable, named for another step) is skipped
// with one warning naming the file and the reason. Temp files are ignored.
// Errors: IoError when `dir` exists but cannot be listed.
// Memory: one checkpoint's tensors plus a 1 MiB buffer.
Result<std::optional<Checkpoint>> LoadNewestCheckpoint(const std::string& dir);

}  // namespace muster::runtime

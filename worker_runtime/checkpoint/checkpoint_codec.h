// The byte format of one checkpoint file (documented in checkpoint.h), read
// and written through a file descriptor. Knows nothing of names or
// directories.
//
// Thread-safety: pure functions of their arguments and the file.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "worker_runtime/checkpoint/checkpoint.h"

namespace muster::runtime {

inline constexpr char kCheckpointMagic[8] = {'M', 'S', 'T', 'R', 'C', 'K', 'P', 'T'};
inline constexpr uint32_t kCheckpointFormatVersion = 1;

// The exact size EncodeCheckpoint writes for `ckpt`.
uint64_t EncodedCheckpointSize(const Checkpoint& ckpt);

// Writes `ckpt` at fd's current offset. Does not fsync.
// Errors: IoError with the system's reason (no path: the caller adds it).
Status EncodeCheckpoint(int fd, const Checkpoint& ckpt);

// Reads the checkpoint that fills the file behind `fd`, from offset 0.
// Errors: InvalidArgument saying why the bytes are not a valid checkpoint
// (truncated, checksum mismatch, bad magic, ...); IoError when reading fails.
Result<Checkpoint> DecodeCheckpoint(int fd);

}  // namespace muster::runtime

// Buffered file I/O that checksums (CRC-32C) every byte passing through, and
// encodes integers and floats little-endian. Floats are copied as they lie
// in memory, so muster builds only for little-endian hosts (static_assert).
// Used by the checkpoint codec; errors carry no path (the caller adds it).
//
// Thread-safety: one object per thread; each owns a buffer, not the fd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"

namespace muster::runtime {

class ChecksummedWriter {
 public:
  // REQUIRES: fd is open for writing and outlives the writer.
  explicit ChecksummedWriter(int fd);

  // Appends are buffered: call Flush() once at the end.
  Status Append(const void* data, size_t size);
  Status AppendU32(uint32_t value);
  Status AppendU64(uint64_t value);
  Status AppendFloats(const std::vector<float>& values);

  // CRC-32C of everything appended so far.
  uint32_t crc() const { return crc_; }

  // Errors: IoError with the system's reason.
  Status Flush();

 private:
  Status WriteAll(const void* data, size_t size);

  int fd_;
  uint32_t crc_ = 0;
  std::vector<unsigned char> buffer_;
};

class ChecksummedReader {
 public:
  // Hands out at most `limit` bytes from fd's current offset.
  // REQUIRES: fd is open for reading and outlives the reader.
  ChecksummedReader(int fd, uint64_t limit);

  uint64_t remaining() const { return remaining_; }
  // CRC-32C of everything read so far.
  uint32_t crc() const { return crc_; }

  // Errors: InvalidArgument ("truncated: ...") when `size` exceeds the limit
  // left or the file ends early; IoError when read(2) fails.
  Status Read(void* data, uint64_t size);
  Result<uint32_t> ReadU32();
  Result<uint64_t> ReadU64();
  // Reads `count` float32 values (count * 4 bytes).
  Result<std::vector<float>> ReadFloats(uint64_t count);

 private:
  Status Fill();

  int fd_;
  uint64_t remaining_;
  uint32_t crc_ = 0;
  std::vector<unsigned char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace muster::runtime

#include "worker_runtime/checkpoint/checksummed_stream.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <string>

#include "worker_runtime/checkpoint/crc32c.h"

namespace muster::runtime {
namespace {

// Floats are copied to and from the file as they lie in memory, which is the
// format's little-endian IEEE 754 only on a little-endian host.
static_assert(std::endian::native == std::endian::little,
              "checkpoint floats are stored little-endian by copying memory; "
              "a big-endian host would need a byte swap here");

// Large enough that tensors stream at disk speed, small next to a model.
constexpr size_t kBufferSize = size_t{1} << 20;

std::string StreamSystemError(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

ChecksummedWriter::ChecksummedWriter(int fd) : fd_(fd) { buffer_.reserve(kBufferSize); }

Status ChecksummedWriter::Append(const void* data, size_t size) {
  crc_ = Crc32cExtend(crc_, data, size);
  if (buffer_.size() + size > kBufferSize) {
    if (Status flushed = Flush(); !flushed.ok()) return flushed;
    // Large tensors go straight to the file instead of through the buffer.
    if (size > kBufferSize) return WriteAll(data, size);
  }
  const auto* bytes = static_cast<const unsigned char*>(data);
  buffer_.insert(buffer_.end(), bytes, bytes + size);
  return Status::Ok();
}

Status ChecksummedWriter::AppendU32(uint32_t value) {
  unsigned char bytes[4];
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
  return Append(bytes, sizeof(bytes));
}

Status ChecksummedWriter::AppendU64(uint64_t value) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
  return Append(bytes, sizeof(bytes));
}

Status ChecksummedWriter::AppendFloats(const std::vector<float>& values) {
  return Append(values.data(), values.size() * sizeof(float));
}

Status ChecksummedWriter::Flush() {
  Status written = WriteAll(buffer_.data(), buffer_.size());
  buffer_.clear();
  return written;
}

Status ChecksummedWriter::WriteAll(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(StreamSystemError("write"));
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return Status::Ok();
}

ChecksummedReader::ChecksummedReader(int fd, uint64_t limit)
    : fd_(fd), remaining_(limit), buffer_(kBufferSize) {}

Status ChecksummedReader::Read(void* data, uint64_t size) {
  if (size > remaining_) {
    return Status::InvalidArgument("truncated: needs " + std::to_string(size) + " more bytes, " +
                                   std::to_string(remaining_) + " left");
  }
  auto* out = static_cast<unsigned char*>(data);
  const uint64_t wanted = size;
  while (size > 0) {
    if (begin_ == end_) {
      if (Status filled = Fill(); !filled.ok()) return filled;
    }
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, end_ - begin_));
    std::memcpy(out, buffer_.data() + begin_, chunk);
    begin_ += chunk;
    out += chunk;
    size -= chunk;
  }
  crc_ = Crc32cExtend(crc_, data, static_cast<size_t>(wanted));
  remaining_ -= wanted;
  return Status::Ok();
}

Result<uint32_t> ChecksummedReader::ReadU32() {
  unsigned char bytes[4];
  if (Status read = Read(bytes, sizeof(bytes)); !read.ok()) return read;
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= uint32_t{bytes[i]} << (8 * i);
  return value;
}

Result<uint64_t> ChecksummedReader::ReadU64() {
  unsigned char bytes[8];
  if (Status read = Read(bytes, sizeof(bytes)); !read.ok()) return read;
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= uint64_t{bytes[i]} << (8 * i);
  return value;
}

Result<std::vector<float>> ChecksummedReader::ReadFloats(uint64_t count) {
  std::vector<float> values(static_cast<size_t>(count));
  if (Status read = Read(values.data(), count * sizeof(float)); !read.ok()) return read;
  return values;
}

Status ChecksummedReader::Fill() {
  for (;;) {
    const ssize_t got = ::read(fd_, buffer_.data(), buffer_.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::IoError(StreamSystemError("read"));
    // The file shrank after its size was taken: as torn as a short file.
    if (got == 0) return Status::InvalidArgument("truncated: end of file came early");
    begin_ = 0;
    end_ = static_cast<size_t>(got);
    return Status::Ok();
  }
}

}  // namespace muster::runtime

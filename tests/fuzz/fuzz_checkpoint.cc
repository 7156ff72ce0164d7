// Fuzzes the checkpoint decoder (worker_runtime/checkpoint/checkpoint_codec.h):
// a checkpoint file as a restarted worker finds it, torn or corrupt.
//
// Input: the file's bytes. Each input is decoded twice from a memfd: as is,
// and "repaired" (when at least 64 bytes, the smallest checkpoint): its length field set to its
// size and its CRC-32C recomputed, so that mutations of the fields also reach the checks after the
// checksum's and the success path.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is InvalidArgument (the memfd never fails to read) with a
//     non-empty message;
//   - an accepted checkpoint re-encodes (EncodeCheckpoint) to exactly the
//     input's bytes, and EncodedCheckpointSize() is their size: the format
//     has one encoding per checkpoint, so nothing the decoder accepts may
//     differ from what the encoder writes (bytes are compared, so NaN
//     tensors count too).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "worker_runtime/checkpoint/checkpoint_codec.h"
#include "worker_runtime/checkpoint/crc32c.h"

namespace {

using muster::fuzz::Printable;
namespace runtime = muster::runtime;

constexpr size_t kLengthOffset = 12;
constexpr size_t kMinimumFileSize = 64;  // checkpoint_codec.cc: every fixed field and the CRC

int MakeMemFd(const char* name) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) std::abort();
  return fd;
}

// Makes the file behind `fd` hold exactly `bytes`.
void Fill(int fd, std::string_view bytes) {
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    std::abort();
  }
}

std::string ReadAll(int fd) {
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0) std::abort();
  std::string bytes(static_cast<size_t>(size), '\0');
  if (::pread(fd, bytes.data(), bytes.size(), 0) != size) std::abort();
  return bytes;
}

void CheckDecode(std::string_view file) {
  static const int in = MakeMemFd("fuzz-checkpoint-in");
  static const int out = MakeMemFd("fuzz-checkpoint-out");
  Fill(in, file);
  const auto decoded = runtime::DecodeCheckpoint(in);
  if (!decoded.ok()) {
    FUZZ_CHECK(decoded.status().IsInvalidArgument(),
               "not InvalidArgument: " + decoded.status().message());
    FUZZ_CHECK(!decoded.status().message().empty(), "a refusal without a message");
    return;
  }
  FUZZ_CHECK(runtime::EncodedCheckpointSize(*decoded) == file.size(),
             "EncodedCheckpointSize " + std::to_string(runtime::EncodedCheckpointSize(*decoded)) +
                 " for a file of " + std::to_string(file.size()));
  if (::ftruncate(out, 0) != 0 || ::lseek(out, 0, SEEK_SET) != 0) std::abort();
  const muster::Status written = runtime::EncodeCheckpoint(out, *decoded);
  FUZZ_CHECK(written.ok(), "EncodeCheckpoint: " + written.message());
  const std::string encoded = ReadAll(out);
  FUZZ_CHECK(encoded == file, "an accepted checkpoint re-encodes differently: " + Printable(file) +
                                  " -> " + Printable(encoded));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  CheckDecode(file);
  if (size >= kMinimumFileSize) {
    std::string repaired(file);
    const uint64_t length = size;
    std::memcpy(repaired.data() + kLengthOffset, &length, sizeof length);
    const uint32_t crc = runtime::Crc32cExtend(0, repaired.data(), size - 4);
    std::memcpy(repaired.data() + size - 4, &crc, sizeof crc);
    if (repaired != file) CheckDecode(repaired);
  }
  return 0;
}

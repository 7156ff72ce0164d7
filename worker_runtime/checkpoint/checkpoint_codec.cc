#include "worker_runtime/checkpoint/checkpoint_codec.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "worker_runtime/checkpoint/checksummed_stream.h"

namespace muster::runtime {
namespace {

constexpr uint64_t kChecksumSize = 4;
// magic, version, length, step, epoch, position, metadata length, tensor count, checksum.
constexpr uint64_t kMinimumFileSize = 8 + 4 + 8 + 8 + 8 + 8 + 8 + 8 + kChecksumSize;
// The smallest encoding of one tensor: an empty name and no elements.
constexpr uint64_t kMinimumTensorSize = 8 + 8;

std::string SystemError(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// Bytes left for fields, the trailing checksum excluded.
uint64_t FieldBytesLeft(const ChecksummedReader& reader) {
  return reader.remaining() > kChecksumSize ? reader.remaining() - kChecksumSize : 0;
}

Status TooLong(const char* what, uint64_t claimed, uint64_t left) {
  return Status::InvalidArgument(std::string(what) + " " + std::to_string(claimed) +
                                 " does not fit in the " + std::to_string(left) +
                                 " bytes left (corrupt length)");
}

Result<std::pair<std::string, std::vector<float>>> ReadTensor(ChecksummedReader& reader) {
  Result<uint64_t> name_length = reader.ReadU64();
  if (!name_length.ok()) return name_length.status();
  if (*name_length > FieldBytesLeft(reader)) {
    return TooLong("tensor name length", *name_length, FieldBytesLeft(reader));
  }
  std::string name(static_cast<size_t>(*name_length), '\0');
  if (Status read = reader.Read(name.data(), name.size()); !read.ok()) return read;
  Result<uint64_t> count = reader.ReadU64();
  if (!count.ok()) return count.status();
  if (*count > FieldBytesLeft(reader) / sizeof(float)) {
    return TooLong("tensor element count", *count, FieldBytesLeft(reader));
  }
  Result<std::vector<float>> values = reader.ReadFloats(*count);
  if (!values.ok()) return values.status();
  return std::make_pair(std::move(name), std::move(values).value());
}

Status ReadHeader(ChecksummedReader& reader, uint64_t file_size) {
  char magic[sizeof(kCheckpointMagic)];
  if (Status read = reader.Read(magic, sizeof(magic)); !read.ok()) return read;
  if (std::memcmp(magic, kCheckpointMagic, sizeof(magic)) != 0) {
    return Status::InvalidArgument("bad magic: not a muster checkpoint");
  }
  Result<uint32_t> version = reader.ReadU32();
  if (!version.ok()) return version.status();
  if (*version != kCheckpointFormatVersion) {
    return Status::InvalidArgument("format version " + std::to_string(*version) +
                                   " is not the supported " +
                                   std::to_string(kCheckpointFormatVersion));
  }
  Result<uint64_t> total_length = reader.ReadU64();
  if (!total_length.ok()) return total_length.status();
  if (*total_length != file_size) {
    return Status::InvalidArgument("length field says " + std::to_string(*total_length) +
                                   " bytes but the file has " + std::to_string(file_size) +
                                   " (torn write?)");
  }
  return Status::Ok();
}

}  // namespace

uint64_t EncodedCheckpointSize(const Checkpoint& ckpt) {
  uint64_t size = kMinimumFileSize + ckpt.metadata.size();
  for (const auto& [name, values] : ckpt.tensors) {
    size += kMinimumTensorSize + name.size() + values.size() * sizeof(float);
  }
  return size;
}

Status EncodeCheckpoint(int fd, const Checkpoint& ckpt) {
  ChecksummedWriter writer(fd);
  Status status = writer.Append(kCheckpointMagic, sizeof(kCheckpointMagic));
  if (status.ok()) status = writer.AppendU32(kCheckpointFormatVersion);
  if (status.ok()) status = writer.AppendU64(EncodedCheckpointSize(ckpt));
  if (status.ok()) status = writer.AppendU64(ckpt.step);
  if (status.ok()) status = writer.AppendU64(ckpt.epoch);
  if (status.ok()) status = writer.AppendU64(ckpt.sampler_position);
  if (status.ok()) status = writer.AppendU64(ckpt.metadata.size());
  if (status.ok()) status = writer.Append(ckpt.metadata.data(), ckpt.metadata.size());
  if (status.ok()) status = writer.AppendU64(ckpt.tensors.size());
  for (const auto& [name, values] : ckpt.tensors) {
    if (status.ok()) status = writer.AppendU64(name.size());
    if (status.ok()) status = writer.Append(name.data(), name.size());
    if (status.ok()) status = writer.AppendU64(values.size());
    if (status.ok()) status = writer.AppendFloats(values);
  }
  // The checksum covers everything before it, so it is taken before appending.
  if (status.ok()) status = writer.AppendU32(writer.crc());
  if (status.ok()) status = writer.Flush();
  return status;
}

Result<Checkpoint> DecodeCheckpoint(int fd) {
  struct stat file_stat {};
  if (::fstat(fd, &file_stat) != 0) return Status::IoError(SystemError("fstat"));
  const uint64_t file_size = static_cast<uint64_t>(file_stat.st_size);
  if (file_size < kMinimumFileSize) {
    return Status::InvalidArgument("truncated: " + std::to_string(file_size) +
                                   " bytes, a checkpoint has at least " +
                                   std::to_string(kMinimumFileSize));
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) return Status::IoError(SystemError("lseek"));

  ChecksummedReader reader(fd, file_size);
  if (Status header = ReadHeader(reader, file_size); !header.ok()) return header;

  Checkpoint ckpt;
  for (uint64_t* field : {&ckpt.step, &ckpt.epoch, &ckpt.sampler_position}) {
    Result<uint64_t> value = reader.ReadU64();
    if (!value.ok()) return value.status();
    *field = *value;
  }
  Result<uint64_t> metadata_length = reader.ReadU64();
  if (!metadata_length.ok()) return metadata_length.status();
  if (*metadata_length > FieldBytesLeft(reader)) {
    return TooLong("metadata length", *metadata_length, FieldBytesLeft(reader));
  }
  ckpt.metadata.resize(static_cast<size_t>(*metadata_length));
  if (Status read = reader.Read(ckpt.metadata.data(), ckpt.metadata.size()); !read.ok()) {
    return read;
  }

  Result<uint64_t> tensor_count = reader.ReadU64();
  if (!tensor_count.ok()) return tensor_count.status();
  if (*tensor_count > FieldBytesLeft(reader) / kMinimumTensorSize) {
    return TooLong("tensor count", *tensor_count, FieldBytesLeft(reader));
  }
  ckpt.tensors.reserve(static_cast<size_t>(*tensor_count));
  for (uint64_t i = 0; i < *tensor_count; ++i) {
    auto tensor = ReadTensor(reader);
    if (!tensor.ok()) return tensor.status();
    ckpt.tensors.push_back(std::move(tensor).value());
  }

  if (reader.remaining() != kChecksumSize) {
    return Status::InvalidArgument(std::to_string(FieldBytesLeft(reader)) +
                                   " unexpected bytes before the checksum");
  }
  const uint32_t computed = reader.crc();
  Result<uint32_t> stored = reader.ReadU32();
  if (!stored.ok()) return stored.status();
  if (*stored != computed) {
    return Status::InvalidArgument("checksum mismatch: stored " + std::to_string(*stored) +
                                   ", computed " + std::to_string(computed));
  }
  return ckpt;
}

}  // namespace muster::runtime

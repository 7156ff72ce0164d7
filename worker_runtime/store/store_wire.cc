#include "worker_runtime/store/store_wire.h"

#include <bit>
#include <cassert>
#include <cstring>

namespace muster::runtime::store_wire {
namespace {

static_assert(std::endian::native == std::endian::little,
              "TCPStore sends native-endian integers; muster assumes little-endian hosts");

template <typename T>
void AppendLittle(T value, std::string* out) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out->append(raw, sizeof(T));
}

template <typename T>
T LoadLittle(std::string_view bytes) {
  T value;
  std::memcpy(&value, bytes.data(), sizeof(T));
  return value;
}

void AppendString(std::string_view s, std::string* out) {
  AppendLittle<uint64_t>(s.size(), out);
  out->append(s);
}

std::string Start(Query query) { return std::string(1, static_cast<char>(query)); }

std::string EncodeKeyList(Query query, const std::vector<std::string>& keys) {
  std::string out = Start(query);
  AppendLittle<uint64_t>(keys.size(), &out);
  for (const auto& key : keys) AppendString(key, &out);
  return out;
}

}  // namespace

std::string EncodeSet(std::string_view key, std::string_view value) {
  std::string out = Start(Query::kSet);
  AppendString(key, &out);
  AppendString(value, &out);
  return out;
}

std::string EncodeCompareSet(std::string_view key, std::string_view expected,
                             std::string_view desired) {
  std::string out = Start(Query::kCompareSet);
  AppendString(key, &out);
  AppendString(expected, &out);
  AppendString(desired, &out);
  return out;
}

std::string EncodeGet(std::string_view key) {
  std::string out = Start(Query::kGet);
  AppendString(key, &out);
  return out;
}

std::string EncodeAdd(std::string_view key, int64_t delta) {
  std::string out = Start(Query::kAdd);
  AppendString(key, &out);
  AppendLittle<int64_t>(delta, &out);
  return out;
}

std::string EncodeCheck(const std::vector<std::string>& keys) {
  return EncodeKeyList(Query::kCheck, keys);
}

std::string EncodeWait(const std::vector<std::string>& keys) {
  return EncodeKeyList(Query::kWait, keys);
}

std::string EncodeDeleteKey(std::string_view key) {
  std::string out = Start(Query::kDeleteKey);
  AppendString(key, &out);
  return out;
}

ReplyDecoder::ReplyDecoder(ReplyType type, uint64_t max_bytes)
    : type_(type), max_bytes_(max_bytes) {}

size_t ReplyDecoder::BytesWanted() const {
  if (done_ || failed()) return 0;
  switch (type_) {
    case ReplyType::kByte:
      return 1 - buffer_.size();
    case ReplyType::kInt64:
      return 8 - buffer_.size();
    case ReplyType::kBytes:
      return have_length_ ? length_ - buffer_.size() : 8 - buffer_.size();
  }
  return 0;
}

void ReplyDecoder::Feed(std::string_view bytes) {
  assert(bytes.size() <= BytesWanted());
  buffer_.append(bytes);
  Advance();
}

void ReplyDecoder::Advance() {
  switch (type_) {
    case ReplyType::kByte:
      done_ = buffer_.size() == 1;
      return;
    case ReplyType::kInt64:
      done_ = buffer_.size() == 8;
      return;
    case ReplyType::kBytes:
      if (!have_length_ && buffer_.size() == 8) {
        length_ = LoadLittle<uint64_t>(buffer_);
        buffer_.clear();
        // Checked before anything is reserved for the body.
        if (length_ > max_bytes_) {
          error_ = "reply announces " + std::to_string(length_) + " bytes, more than the " +
                   std::to_string(max_bytes_) + " accepted";
          return;
        }
        have_length_ = true;
      }
      done_ = have_length_ && buffer_.size() == length_;
      return;
  }
}

uint8_t ReplyDecoder::byte() const {
  assert(done_ && type_ == ReplyType::kByte);
  return static_cast<uint8_t>(buffer_[0]);
}

int64_t ReplyDecoder::number() const {
  assert(done_ && type_ == ReplyType::kInt64);
  return LoadLittle<int64_t>(buffer_);
}

std::string ReplyDecoder::TakeBytes() {
  assert(done_ && type_ == ReplyType::kBytes);
  return std::move(buffer_);
}

}  // namespace muster::runtime::store_wire

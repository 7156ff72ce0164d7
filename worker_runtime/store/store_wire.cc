#include "worker_runtime/store/store_wire.h"

#include <cassert>
#include <optional>
#include <utility>

#include "store/tcpstore_codec.h"

namespace muster::runtime::store_wire {
namespace {

using muster::store::Dialect;
using muster::store::EncodeBytes;
using muster::store::Op;

// A request's first byte: the query type of `op` in the dialect StoreClient
// speaks. Every op used here exists in it, so the lookup cannot fail.
std::string Start(Op op) {
  const std::optional<uint8_t> wire = muster::store::OpToWire(Dialect::kLegacy, op);
  assert(wire.has_value());
  std::string out;
  muster::store::EncodeByte(*wire, &out);
  return out;
}

std::string EncodeKeyList(Op op, const std::vector<std::string>& keys) {
  std::string out = Start(op);
  muster::store::EncodeUint64(keys.size(), &out);
  for (const auto& key : keys) EncodeBytes(key, &out);
  return out;
}

}  // namespace

std::string EncodeSet(std::string_view key, std::string_view value) {
  std::string out = Start(Op::kSet);
  EncodeBytes(key, &out);
  EncodeBytes(value, &out);
  return out;
}

std::string EncodeCompareSet(std::string_view key, std::string_view expected,
                             std::string_view desired) {
  std::string out = Start(Op::kCompareSet);
  EncodeBytes(key, &out);
  EncodeBytes(expected, &out);
  EncodeBytes(desired, &out);
  return out;
}

std::string EncodeGet(std::string_view key) {
  std::string out = Start(Op::kGet);
  EncodeBytes(key, &out);
  return out;
}

std::string EncodeAdd(std::string_view key, int64_t delta) {
  std::string out = Start(Op::kAdd);
  EncodeBytes(key, &out);
  muster::store::EncodeInt64(delta, &out);
  return out;
}

std::string EncodeCheck(const std::vector<std::string>& keys) {
  return EncodeKeyList(Op::kCheck, keys);
}

std::string EncodeWait(const std::vector<std::string>& keys) {
  return EncodeKeyList(Op::kWait, keys);
}

std::string EncodeDeleteKey(std::string_view key) {
  std::string out = Start(Op::kDeleteKey);
  EncodeBytes(key, &out);
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
        length_ = muster::store::DecodeUint64(buffer_);
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
  return muster::store::DecodeInt64(buffer_);
}

std::string ReplyDecoder::TakeBytes() {
  assert(done_ && type_ == ReplyType::kBytes);
  return std::move(buffer_);
}

}  // namespace muster::runtime::store_wire

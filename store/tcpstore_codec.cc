#include "store/tcpstore_codec.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "store/dialect_rule.h"

namespace muster::store {
namespace {

static_assert(std::endian::native == std::endian::little,
              "TCPStore sends native-endian integers; muster assumes little-endian hosts");

// An emptied buffer larger than this is released (RequestDecoder::Compact):
// the size of a socket read, so ordinary small requests never reallocate.
constexpr size_t kKeptBufferBytes = 64 * 1024;

template <typename T>
T LoadLittle(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void AppendLittle(T v, std::string* out) {
  char raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  out->append(raw, sizeof(T));
}

}  // namespace

RequestDecoder::RequestDecoder(DecoderLimits limits) : limits_(limits) {}

void RequestDecoder::Feed(std::span<const uint8_t> bytes) {
  Feed(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

namespace {

// `buffer` with room for exactly `size` bytes. std::string::reserve grows to
// at least twice the old capacity (libstdc++), which for a 4 MiB value
// buffered past its announced end would allocate 8.
void ReserveExactly(std::string& buffer, size_t size) {
  if (size >= 2 * buffer.capacity()) {
    buffer.reserve(size);
    return;
  }
  std::string exact;
  exact.reserve(size);
  exact.append(buffer);
  buffer.swap(exact);
}

}  // namespace

void RequestDecoder::Feed(std::string_view bytes) {
  if (!error_.empty()) return;
  Compact();
  // A body whose length is known is buffered in one allocation of its size,
  // not grown by doubling to up to twice that; a read that also carries the
  // next request's first bytes grows it to exactly what it holds (appended
  // to a full buffer, it would double it: a 4 MiB value held as 8).
  if (have_pending_len_) {
    const size_t needed = std::max(pos_ + pending_len_, buffer_.size() + bytes.size());
    if (needed > buffer_.capacity()) ReserveExactly(buffer_, needed);
  }
  buffer_.append(bytes);
}

// Drops consumed bytes, but only once they are at least half the buffer, so
// that a large partial value is moved O(1) times on average, not per Feed.
void RequestDecoder::Compact() {
  if (pos_ == 0) return;
  if (pos_ == buffer_.size()) {
    buffer_.clear();
  } else if (pos_ >= buffer_.size() - pos_) {
    buffer_.erase(0, pos_);
  } else {
    return;
  }
  pos_ = 0;
  // A connection that once sent a large value does not keep its buffer.
  if (buffer_.capacity() > kKeptBufferBytes && buffer_.size() <= kKeptBufferBytes) {
    buffer_.shrink_to_fit();
  }
}

DecodeResult RequestDecoder::Fail(std::string message) {
  error_ = std::move(message);
  buffer_.clear();
  buffer_.shrink_to_fit();
  pos_ = 0;
  return {DecodeResult::kError, {}, error_};
}

bool RequestDecoder::DetectDialect() {
  const size_t avail = buffer_.size() - pos_;
  if (avail < 1) return false;
  if (buffer_[pos_] != 0) {
    dialect_ = Dialect::kLegacy;
    return true;
  }
  // 0x00 is legacy SET and modern VALIDATE; the magic decides.
  if (avail < 5) return false;
  const bool modern = LoadLittle<uint32_t>(buffer_.data() + pos_ + 1) == kValidationMagic;
  dialect_ = modern ? Dialect::kModern : Dialect::kLegacy;
  settled_ = modern;
  return true;
}

std::string_view RequestDecoder::dialect_label() const {
  if (dialect_ == Dialect::kLegacy && !settled_) return "undecided (torch 1.13 or 2.1)";
  return DialectName(dialect_);
}

bool RequestDecoder::BeginRequest(uint8_t wire, const StreamFacts& facts) {
  std::optional<Op> op;
  if (dialect_ == Dialect::kLegacy && !settled_) {
    QueryVerdict verdict = ClassifyUndecidedQuery(wire, facts.wait_pending);
    switch (verdict.verdict) {
      case Verdict::kShared:
        op = OpFromWire(Dialect::kLegacy, wire);
        break;
      case Verdict::kTorch113:
        settled_ = true;
        op = OpFromWire(Dialect::kLegacy, wire);
        break;
      case Verdict::kTorch21:
        dialect_ = Dialect::kTorch21;
        settled_ = true;
        op = OpFromWire(Dialect::kTorch21, wire);
        break;
      case Verdict::kReadKeyFirst:
        // Both readings start with one key; DELETE_KEY's field list reads it.
        query8_undecided_ = true;
        op = Op::kDeleteKey;
        break;
      case Verdict::kClose:
        Fail(std::move(verdict.reason));
        return false;
    }
  } else {
    op = OpFromWire(dialect_, wire);
    if (!op) {
      Fail(UnknownQueryReason(wire, dialect_));
      return false;
    }
  }
  ++pos_;
  in_request_ = true;
  request_ = Request{};
  request_.op = *op;
  fields_done_ = 0;
  count_ = 0;
  have_pending_len_ = false;
  request_bytes_ = 1;
  return true;
}

bool RequestDecoder::SettleQuery8(const StreamFacts& facts) {
  const Query8Facts q8{request_.keys[0].size(), pos_ < buffer_.size(), facts.quiet};
  switch (ClassifyQuery8(q8)) {
    case Query8Verdict::kAppend:
      dialect_ = Dialect::kTorch21;
      request_.op = Op::kAppend;
      break;
    case Query8Verdict::kDeleteKey:
      break;
    case Query8Verdict::kWait:
      awaiting_quiet_ = true;
      return false;
    case Query8Verdict::kClose:
      Fail(Query8AmbiguousReason(q8.key_bytes));
      return false;
  }
  settled_ = true;
  query8_undecided_ = false;
  return true;
}

RequestDecoder::Field RequestDecoder::NextField() const {
  const size_t i = fields_done_;
  switch (request_.op) {
    case Op::kValidate:
    case Op::kPing:
      return i == 0 ? Field::kU32 : Field::kDone;
    case Op::kGetNumKeys:
    case Op::kCancelWait:
    case Op::kListKeys:
      return Field::kDone;
    case Op::kGet:
    case Op::kDeleteKey:
    case Op::kWatchKey:
    case Op::kQueuePop:
    case Op::kQueueLen:
      return i == 0 ? Field::kKey : Field::kDone;
    case Op::kSet:
    case Op::kAppend:
    case Op::kQueuePush:
      return i == 0 ? Field::kKey : i == 1 ? Field::kValue : Field::kDone;
    case Op::kCompareSet:
      return i == 0 ? Field::kKey : i <= 2 ? Field::kValue : Field::kDone;
    case Op::kAdd:
    case Op::kBarrier:
      return i == 0 ? Field::kKey : i == 1 ? Field::kI64 : Field::kDone;
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
      if (i == 0) return Field::kCount;
      return i - 1 < count_ ? Field::kKey : Field::kDone;
    case Op::kMultiSet:
      if (i == 0) return Field::kCount;
      if (i - 1 >= 2 * count_) return Field::kDone;
      return (i - 1) % 2 == 0 ? Field::kKey : Field::kValue;
  }
  return Field::kDone;
}

DecodeResult RequestDecoder::Next(const StreamFacts& facts) {
  awaiting_quiet_ = false;
  if (!error_.empty()) return {DecodeResult::kError, {}, error_};
  // The bytes of requests already returned go now, not at the next read: a
  // large value's buffer is released before the requests after it are
  // answered (their replies are sized against what the connection holds).
  Compact();
  if (dialect_ == Dialect::kUnknown && !DetectDialect()) return {};

  if (!in_request_) {
    if (pos_ == buffer_.size()) return {};
    if (!BeginRequest(static_cast<uint8_t>(buffer_[pos_]), facts)) {
      return {DecodeResult::kError, {}, error_};
    }
  }

  for (;;) {
    // An undecided query 8 is judged once its key is in (dialect_rule.h).
    if (query8_undecided_ && fields_done_ == 1 && !SettleQuery8(facts)) {
      if (!error_.empty()) return {DecodeResult::kError, {}, error_};
      return {};
    }
    const Field field = NextField();
    if (field == Field::kDone) break;
    const size_t avail = buffer_.size() - pos_;
    const char* p = buffer_.data() + pos_;
    switch (field) {
      case Field::kU32:
        if (avail < 4) return {};
        request_.word = LoadLittle<uint32_t>(p);
        pos_ += 4;
        request_bytes_ += 4;
        break;
      case Field::kI64:
        if (avail < 8) return {};
        request_.delta = LoadLittle<int64_t>(p);
        pos_ += 8;
        request_bytes_ += 8;
        break;
      case Field::kCount: {
        if (avail < 8) return {};
        const uint64_t n = LoadLittle<uint64_t>(p);
        if (n > limits_.max_keys) {
          return Fail("too many keys query=" + std::string(OpName(request_.op)) +
                      " count=" + std::to_string(n) + " max=" + std::to_string(limits_.max_keys));
        }
        count_ = n;
        pos_ += 8;
        request_bytes_ += 8;
        break;
      }
      case Field::kKey:
      case Field::kValue: {
        if (!have_pending_len_) {
          if (avail < 8) return {};
          const uint64_t len = LoadLittle<uint64_t>(p);
          // Checked before a single byte of the body is buffered for it.
          if (len > limits_.max_string_bytes) {
            return Fail(std::string(field == Field::kKey ? "key" : "value") + " too large query=" +
                        std::string(OpName(request_.op)) + " length=" + std::to_string(len) +
                        " max=" + std::to_string(limits_.max_string_bytes));
          }
          if (request_bytes_ + 8 + len > limits_.max_request_bytes) {
            return Fail("request too large query=" + std::string(OpName(request_.op)) +
                        " bytes=" + std::to_string(request_bytes_ + 8 + len) +
                        " max=" + std::to_string(limits_.max_request_bytes));
          }
          pos_ += 8;
          request_bytes_ += 8 + len;
          pending_len_ = len;
          have_pending_len_ = true;
          break;  // re-evaluate avail for the body
        }
        if (avail < pending_len_) return {};
        std::string s(p, pending_len_);
        pos_ += pending_len_;
        have_pending_len_ = false;
        (field == Field::kKey ? request_.keys : request_.values).push_back(std::move(s));
        break;
      }
      case Field::kDone:
        break;
    }
    // A string's length prefix alone does not complete its field.
    if (!have_pending_len_) ++fields_done_;
  }

  in_request_ = false;
  DecodeResult result{DecodeResult::kRequest, std::move(request_), {}};
  request_ = Request{};
  Compact();
  return result;
}

void EncodeBytes(std::string_view value, std::string* out) {
  AppendLittle<uint64_t>(value.size(), out);
  out->append(value);
}

void EncodeInt64(int64_t value, std::string* out) { AppendLittle<int64_t>(value, out); }

void EncodeUint64(uint64_t value, std::string* out) { AppendLittle<uint64_t>(value, out); }

void EncodeUint32(uint32_t value, std::string* out) { AppendLittle<uint32_t>(value, out); }

void EncodeByte(uint8_t value, std::string* out) { out->push_back(static_cast<char>(value)); }

uint64_t DecodeUint64(std::string_view bytes) {
  assert(bytes.size() >= sizeof(uint64_t));
  return LoadLittle<uint64_t>(bytes.data());
}

int64_t DecodeInt64(std::string_view bytes) {
  assert(bytes.size() >= sizeof(int64_t));
  return LoadLittle<int64_t>(bytes.data());
}

}  // namespace muster::store

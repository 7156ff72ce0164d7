// The TCPStore request decoder (store/tcpstore_codec.h) under
// fuzzing, shared by fuzz_tcpstore_{legacy,torch21,modern}.cc: each puts its
// dialect's opening bytes before the fuzzed ones and calls RunTcpStoreInput.
//
// Input: byte 0 is a control byte, the rest is what the client sends after
// the opening. Bit 0 of the control byte: WAITs are never answered (so
// StreamFacts::wait_pending is true after a WAIT until a CANCEL_WAIT),
// otherwise every WAIT is answered at once. Bits 1..7 seed how the stream is
// split into Feed() calls (0: all at once).
//
// Invariants beyond "no crash, no sanitizer report":
//   - fed whole (StreamFacts::quiet always true) and fed in chunks (quiet
//     only once every byte is in, as a socket reader would), the decoder
//     returns the same requests and the same error;
//   - re-encoding each request with the query byte of the dialect the
//     decoder reports right after it gives back the input's bytes exactly, up
//     to where decoding stopped; without an error, buffered_bytes() is at
//     most the rest of the input, and 0 when nothing follows;
//   - each request has the fields its Op declares (keys and values counts);
//     no key or value exceeds the limits, nor a key count;
//   - an error has a non-empty message and is sticky; a dialect, once
//     settled, never changes; the opening puts the connection in the
//     dialect the target names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/tcpstore_codec.h"
#include "store/tcpstore_protocol.h"
#include "tests/fuzz/fuzz_check.h"

namespace muster::fuzz {

// Small enough that inputs of a few KiB reach every limit check.
inline constexpr store::DecoderLimits kFuzzLimits{
    .max_string_bytes = 1024, .max_keys = 16, .max_request_bytes = 4096};

struct Decoded {
  store::Request request;
  store::Dialect dialect;  // decoder.dialect() right after it
  bool operator==(const Decoded&) const = default;
};

struct StoreOutcome {
  std::vector<Decoded> requests;
  std::string error;
  size_t buffered = 0;
};

// Appends the wire form of `request` in `dialect`, the decoder's inverse,
// after checking it carries the keys and values its Op has on the wire.
inline void EncodeRequest(const Decoded& d, std::string* out) {
  using store::Op;
  const store::Request& r = d.request;
  const auto wire = store::OpToWire(d.dialect, r.op);
  FUZZ_CHECK(wire.has_value(), std::string(store::OpName(r.op)) + " decoded in dialect " +
                                   std::string(store::DialectName(d.dialect)) +
                                   ", which has no such query");
  store::EncodeByte(*wire, out);
  auto shape = [&](size_t keys, size_t values) {
    FUZZ_CHECK(r.keys.size() == keys && r.values.size() == values,
               std::string(store::OpName(r.op)) + " with " + std::to_string(r.keys.size()) +
                   " keys and " + std::to_string(r.values.size()) + " values");
  };
  auto key = [&](size_t i) { store::EncodeBytes(r.keys.at(i), out); };
  auto value = [&](size_t i) { store::EncodeBytes(r.values.at(i), out); };
  switch (r.op) {
    case Op::kValidate:
    case Op::kPing:
      shape(0, 0);
      store::EncodeUint32(r.word, out);
      break;
    case Op::kGetNumKeys:
    case Op::kCancelWait:
    case Op::kListKeys:
      shape(0, 0);
      break;
    case Op::kGet:
    case Op::kDeleteKey:
    case Op::kWatchKey:
    case Op::kQueuePop:
    case Op::kQueueLen:
      shape(1, 0);
      key(0);
      break;
    case Op::kSet:
    case Op::kAppend:
    case Op::kQueuePush:
      shape(1, 1);
      key(0);
      value(0);
      break;
    case Op::kCompareSet:
      shape(1, 2);
      key(0);
      value(0);
      value(1);
      break;
    case Op::kAdd:
    case Op::kBarrier:
      shape(1, 0);
      key(0);
      store::EncodeInt64(r.delta, out);
      break;
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
      shape(r.keys.size(), 0);
      store::EncodeUint64(r.keys.size(), out);
      for (size_t i = 0; i < r.keys.size(); ++i) key(i);
      break;
    case Op::kMultiSet:
      shape(r.keys.size(), r.keys.size());
      store::EncodeUint64(r.keys.size(), out);
      for (size_t i = 0; i < r.keys.size(); ++i) {
        key(i);
        value(i);
      }
      break;
  }
}

// Within the decoder's limits (the shape per Op is checked where every
// request is encoded again, EncodeRequest).
inline void CheckLimits(const store::Request& r) {
  FUZZ_CHECK(r.keys.size() <= kFuzzLimits.max_keys, "more keys than max_keys");
  for (const auto* list : {&r.keys, &r.values}) {
    for (const std::string& s : *list) {
      FUZZ_CHECK(s.size() <= kFuzzLimits.max_string_bytes, "a string over max_string_bytes");
    }
  }
}

// The connection's facts as the harness models the server: a WAIT stays
// unanswered (when never_answer) until the client cancels it.
class FactsModel {
 public:
  explicit FactsModel(bool never_answer) : never_answer_(never_answer) {}
  store::StreamFacts Facts(bool quiet) const { return {.wait_pending = pending_, .quiet = quiet}; }
  void Saw(const store::Request& r) {
    if (r.op == store::Op::kWait && never_answer_) pending_ = true;
    if (r.op == store::Op::kCancelWait) pending_ = false;
  }

 private:
  bool never_answer_;
  bool pending_ = false;
};

// Takes every request available now; true once the decoder failed.
inline bool DrainStore(store::RequestDecoder& decoder, FactsModel& model, bool quiet,
                       StoreOutcome& out) {
  for (;;) {
    const bool was_settled = decoder.dialect_settled();
    const store::Dialect was = decoder.dialect();
    store::DecodeResult r = decoder.Next(model.Facts(quiet));
    if (was_settled) {
      FUZZ_CHECK(decoder.dialect_settled() && decoder.dialect() == was,
                 "a settled dialect changed from " + std::string(store::DialectName(was)) + " to " +
                     std::string(store::DialectName(decoder.dialect())));
    }
    if (r.state == store::DecodeResult::kNeedMore) return false;
    if (r.state == store::DecodeResult::kError) {
      FUZZ_CHECK(!r.error.empty(), "an error without a message");
      const store::DecodeResult again = decoder.Next(model.Facts(quiet));
      FUZZ_CHECK(again.state == store::DecodeResult::kError && again.error == r.error,
                 "the error is not sticky: " + r.error);
      out.error = r.error;
      return true;
    }
    CheckLimits(r.request);
    model.Saw(r.request);
    out.requests.push_back({std::move(r.request), decoder.dialect()});
  }
}

// Decodes `stream` fed in chunks that Chunker(seed) sizes; seed 0: whole.
inline StoreOutcome DecodeStoreChunked(std::string_view stream, bool never_answer, uint8_t seed) {
  store::RequestDecoder decoder(kFuzzLimits);
  FactsModel model(never_answer);
  Chunker chunker(seed);
  StoreOutcome out;
  bool failed = false;
  for (size_t at = 0; at < stream.size() && !failed;) {
    const size_t size = chunker.Next(stream.size() - at);
    decoder.Feed(stream.substr(at, size));
    at += size;
    // The client is quiet only once it has sent everything.
    failed = DrainStore(decoder, model, /*quiet=*/at == stream.size(), out);
  }
  out.buffered = decoder.buffered_bytes();
  return out;
}

// `opening`: the dialect's first bytes; `dialect`: what it must settle to
// (kUnknown: the fuzzed bytes decide).
inline int RunTcpStoreInput(const uint8_t* data, size_t size, std::string_view opening,
                            store::Dialect dialect) {
  if (size < 1) return -1;
  const bool never_answer = (data[0] & 1) != 0;
  const auto seed = static_cast<uint8_t>(data[0] >> 1);
  std::string stream(opening);
  stream.append(reinterpret_cast<const char*>(data) + 1, size - 1);

  const StoreOutcome whole = DecodeStoreChunked(stream, never_answer, 0);
  const StoreOutcome chunked = DecodeStoreChunked(stream, never_answer, seed);
  FUZZ_CHECK(whole.requests == chunked.requests && whole.error == chunked.error,
             "whole and chunked decoding differ: " + std::to_string(whole.requests.size()) +
                 " vs " + std::to_string(chunked.requests.size()) + " requests, '" + whole.error +
                 "' vs '" + chunked.error + "'");

  std::string encoded;
  for (const Decoded& d : whole.requests) EncodeRequest(d, &encoded);
  FUZZ_CHECK(std::string_view(stream).starts_with(encoded),
             "re-encoded requests are not the input's bytes: " + Printable(encoded));
  if (whole.error.empty()) {
    // The fields of a partial request already read are not buffered bytes.
    const size_t rest = stream.size() - encoded.size();
    FUZZ_CHECK(whole.buffered <= rest && (rest > 0 || whole.buffered == 0),
               "buffered_bytes() " + std::to_string(whole.buffered) + " but " +
                   std::to_string(rest) + " bytes follow the last request");
  }
  if (dialect != store::Dialect::kUnknown && !whole.requests.empty()) {
    FUZZ_CHECK(whole.requests.front().dialect == dialect,
               "the opening did not settle the dialect: " +
                   std::string(store::DialectName(whole.requests.front().dialect)));
  }
  return 0;
}

}  // namespace muster::fuzz

// The TCPStore request decoder and response encoders, against literal bytes.
// Legacy literals marked "captured" are exactly what torch 1.13's client sent.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "store/tcpstore_codec.h"
#include "store_wire_bytes.h"

namespace muster::store {
namespace {

using namespace muster::store::testing;

struct Decoded {
  std::vector<Request> requests;
  DecodeResult::State last = DecodeResult::kNeedMore;
  std::string error;
};

// Feeds `bytes` in one piece, then drains every complete request.
Decoded DecodeAll(RequestDecoder& decoder, const std::string& bytes) {
  decoder.Feed(bytes);
  Decoded out;
  for (;;) {
    DecodeResult r = decoder.Next();
    out.last = r.state;
    if (r.state == DecodeResult::kRequest) {
      out.requests.push_back(std::move(r.request));
      continue;
    }
    out.error = r.error;
    return out;
  }
}

Decoded DecodeAll(const std::string& bytes, DecoderLimits limits = {}) {
  RequestDecoder decoder(limits);
  return DecodeAll(decoder, bytes);
}

Request Single(const std::string& bytes) {
  Decoded d = DecodeAll(bytes);
  INFO("error: " << d.error);
  REQUIRE(d.last == DecodeResult::kNeedMore);
  REQUIRE(d.requests.size() == 1);
  return d.requests[0];
}

Request Make(Op op, std::vector<std::string> keys = {}, std::vector<std::string> values = {},
             int64_t delta = 0, uint32_t word = 0) {
  return Request{op, std::move(keys), std::move(values), delta, word};
}

// ---------------------------------------------------------------- legacy

TEST_CASE("legacy requests decode for every query type", "[store][codec]") {
  SECTION("SET key value (captured)") {
    CHECK(Single(Hex("00 0300000000000000 2f6b31 0200000000000000 7631")) ==
          Make(Op::kSet, {"/k1"}, {"v1"}));
  }
  SECTION("COMPARE_SET key expected desired (captured, empty expected)") {
    CHECK(Single(Hex("01 0300000000000000 2f6331 0000000000000000 0300000000000000 6e6577")) ==
          Make(Op::kCompareSet, {"/c1"}, {"", "new"}));
  }
  SECTION("GET key (captured)") {
    CHECK(Single(Hex("02 0300000000000000 2f6b31")) == Make(Op::kGet, {"/k1"}));
  }
  SECTION("ADD key int64 (captured init key and a negative delta)") {
    CHECK(Single(Hex("03 0500000000000000 696e69742f 0100000000000000")) ==
          Make(Op::kAdd, {"init/"}, {}, 1));
    CHECK(Single(Hex("03 0400000000000000 2f636e74 feffffffffffffff")) ==
          Make(Op::kAdd, {"/cnt"}, {}, -2));
  }
  SECTION("CHECK count keys") {
    CHECK(Single(U8(4) + U64(2) + Str("a") + Str("bb")) == Make(Op::kCheck, {"a", "bb"}));
  }
  SECTION("WAIT count keys (captured)") {
    CHECK(Single(Hex("05 0200000000000000 0300000000000000 2f6b31 0400000000000000 2f636e74")) ==
          Make(Op::kWait, {"/k1", "/cnt"}));
  }
  SECTION("GETNUMKEYS has no arguments (captured)") {
    CHECK(Single(Hex("06")) == Make(Op::kGetNumKeys));
  }
  SECTION("WATCH_KEY key, once the connection is known to be torch 1.13") {
    // A DELETE_KEY the client waited on proves 1.13 (dialect_rule.h); before
    // that, 7 could be torch 2.1's DELETE_KEY.
    RequestDecoder d;
    CHECK(DecodeAll(d, U8(8) + Str("k")).requests == std::vector{Make(Op::kDeleteKey, {"k"})});
    CHECK(DecodeAll(d, U8(7) + Str("w")).requests == std::vector{Make(Op::kWatchKey, {"w"})});
  }
  SECTION("DELETE_KEY key (captured)") {
    CHECK(Single(Hex("08 0300000000000000 2f6b31")) == Make(Op::kDeleteKey, {"/k1"}));
  }
}

TEST_CASE("the first request decides the dialect", "[store][codec]") {
  SECTION("a non-zero first byte is legacy at once") {
    RequestDecoder d;
    d.Feed(Hex("06"));
    CHECK(d.Next().state == DecodeResult::kRequest);
    CHECK(d.dialect() == Dialect::kLegacy);
  }
  SECTION("0x00 waits for five bytes before choosing") {
    RequestDecoder d;
    d.Feed(Hex("00 0300"));
    CHECK(d.Next().state == DecodeResult::kNeedMore);
    CHECK(d.dialect() == Dialect::kUnknown);
    d.Feed(Hex("0000"));
    CHECK(d.Next().state == DecodeResult::kNeedMore);
    CHECK(d.dialect() == Dialect::kLegacy);
  }
  SECTION("0x00 followed by the magic is modern") {
    RequestDecoder d;
    d.Feed(ModernValidate());
    DecodeResult r = d.Next();
    REQUIRE(r.state == DecodeResult::kRequest);
    CHECK(r.request == Make(Op::kValidate, {}, {}, 0, kValidationMagic));
    CHECK(d.dialect() == Dialect::kModern);
  }
  SECTION("bytes a legacy SET could only produce with a 1 GB key are read as modern") {
    // As legacy, 0x00 + magic would announce a key of at least 0x3C85F7CE
    // bytes, which the decoder would refuse anyway: no real legacy client is
    // misread.
    STATIC_REQUIRE(kValidationMagic > DecoderLimits{}.max_string_bytes);
    RequestDecoder d;
    d.Feed(U8(0) + U64(kValidationMagic));
    CHECK(d.Next().request.op == Op::kValidate);
    CHECK(d.dialect() == Dialect::kModern);
  }
  SECTION("after a legacy opening, 0x00 means SET") {
    Decoded d = DecodeAll(U8(6) + U8(0) + Str("k") + Str("v"));
    REQUIRE(d.requests.size() == 2);
    CHECK(d.requests[1] == Make(Op::kSet, {"k"}, {"v"}));
  }
}

TEST_CASE("a connection without handshake rejects bytes neither torch 1.13 nor 2.1 has",
          "[store][codec]") {
  for (int q : {12, 13, 0x7f, 0xff}) {
    Decoded d = DecodeAll(U8(static_cast<uint8_t>(q)) + Str("k"));
    INFO("query byte " << q);
    CHECK(d.last == DecodeResult::kError);
    CHECK(d.error.find("unknown query type query=" + std::to_string(q)) != std::string::npos);
    CHECK(d.error.find("no such query in torch 1.13 or 2.1") != std::string::npos);
    CHECK(d.requests.empty());
  }
}

TEST_CASE("a torch 1.13 connection rejects torch 2.1's extra query bytes", "[store][codec]") {
  for (int q : {9, 10, 11}) {
    // DELETE_KEY with nothing after its key settles the connection as 1.13.
    RequestDecoder decoder;
    REQUIRE(DecodeAll(decoder, U8(8) + Str("k")).requests.size() == 1);
    Decoded d = DecodeAll(decoder, U8(static_cast<uint8_t>(q)) + U64(0));
    INFO("query byte " << q);
    CHECK(d.requests.empty());
    CHECK(d.last == DecodeResult::kError);
    CHECK(d.error == "unknown query type query=" + std::to_string(q) + " dialect=legacy");
  }
}

// ---------------------------------------------------------------- modern

TEST_CASE("modern requests decode for every query type", "[store][codec]") {
  const std::string hello = ModernValidate() + U8(13) + U32(0xdeadbeef);  // VALIDATE, PING
  struct Case {
    const char* name;
    std::string bytes;
    Request want;
  };
  std::vector<Case> cases = {
      {"SET", U8(1) + Str("k") + Str("v"), Make(Op::kSet, {"k"}, {"v"})},
      {"COMPARE_SET", U8(2) + Str("k") + Str("old") + Str("new"),
       Make(Op::kCompareSet, {"k"}, {"old", "new"})},
      {"GET", U8(3) + Str("k"), Make(Op::kGet, {"k"})},
      {"ADD", U8(4) + Str("k") + I64(-7), Make(Op::kAdd, {"k"}, {}, -7)},
      {"CHECK", U8(5) + U64(2) + Str("a") + Str("b"), Make(Op::kCheck, {"a", "b"})},
      {"WAIT", U8(6) + U64(1) + Str("a"), Make(Op::kWait, {"a"})},
      {"GETNUMKEYS", U8(7), Make(Op::kGetNumKeys)},
      {"DELETE_KEY", U8(8) + Str("k"), Make(Op::kDeleteKey, {"k"})},
      {"APPEND", U8(9) + Str("k") + Str("tail"), Make(Op::kAppend, {"k"}, {"tail"})},
      {"MULTI_GET", U8(10) + U64(3) + Str("a") + Str("b") + Str("c"),
       Make(Op::kMultiGet, {"a", "b", "c"})},
      {"MULTI_SET", U8(11) + U64(2) + Str("a") + Str("1") + Str("b") + Str("2"),
       Make(Op::kMultiSet, {"a", "b"}, {"1", "2"})},
      {"CANCEL_WAIT", U8(12), Make(Op::kCancelWait)},
      {"PING", U8(13) + U32(42), Make(Op::kPing, {}, {}, 0, 42)},
      {"QUEUE_PUSH", U8(14) + Str("q") + Str("item"), Make(Op::kQueuePush, {"q"}, {"item"})},
      {"QUEUE_POP", U8(15) + Str("q"), Make(Op::kQueuePop, {"q"})},
      {"QUEUE_LEN", U8(16) + Str("q"), Make(Op::kQueueLen, {"q"})},
      {"LIST_KEYS", U8(17), Make(Op::kListKeys)},
      {"BARRIER", U8(18) + Str("b") + I64(4), Make(Op::kBarrier, {"b"}, {}, 4)},
      {"VALIDATE again", U8(0) + U32(kValidationMagic),
       Make(Op::kValidate, {}, {}, 0, kValidationMagic)},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      Decoded d = DecodeAll(hello + c.bytes);
      INFO("error: " << d.error);
      REQUIRE(d.last == DecodeResult::kNeedMore);
      REQUIRE(d.requests.size() == 3);
      CHECK(d.requests[0].op == Op::kValidate);
      CHECK(d.requests[1] == Make(Op::kPing, {}, {}, 0, 0xdeadbeef));
      CHECK(d.requests[2] == c.want);
    }
  }
}

TEST_CASE("modern rejects query types it does not have", "[store][codec]") {
  for (int q : {19, 20, 0x80, 0xff}) {
    Decoded d = DecodeAll(ModernValidate() + U8(static_cast<uint8_t>(q)));
    INFO("query byte " << q);
    CHECK(d.requests.size() == 1);
    CHECK(d.last == DecodeResult::kError);
    CHECK(d.error.find("dialect=modern") != std::string::npos);
  }
}

TEST_CASE("MULTI_SET and MULTI_GET with zero keys are complete requests", "[store][codec]") {
  Decoded d = DecodeAll(ModernValidate() + U8(11) + U64(0) + U8(10) + U64(0));
  REQUIRE(d.requests.size() == 3);
  CHECK(d.requests[1] == Make(Op::kMultiSet));
  CHECK(d.requests[2] == Make(Op::kMultiGet));
}

// ---------------------------------------------------------------- streaming

TEST_CASE("a request split at every byte boundary decodes the same", "[store][codec]") {
  const std::vector<std::string> streams = {
      // legacy: what a torch 1.13 worker sends in a row
      Hex("03 0500000000000000 696e69742f 0100000000000000") + U8(0) + Str("/k") +
          Str(std::string("v\0x", 3)) + U8(5) + U64(2) + Str("/a") + Str("/b") + U8(1) + Str("/c") +
          Str("") + Str("d") + U8(6),
      // modern
      ModernValidate() + U8(13) + U32(7) + U8(11) + U64(2) + Str("a") + Str("1") + Str("b") +
          Str("") + U8(4) + Str("n") + I64(3) + U8(12),
  };
  for (const auto& stream : streams) {
    const Decoded whole = DecodeAll(stream);
    REQUIRE(whole.last == DecodeResult::kNeedMore);
    REQUIRE(whole.requests.size() >= 4);
    for (size_t cut = 0; cut <= stream.size(); ++cut) {
      RequestDecoder d;
      Decoded first = DecodeAll(d, stream.substr(0, cut));
      Decoded second = DecodeAll(d, stream.substr(cut));
      first.requests.insert(first.requests.end(), second.requests.begin(), second.requests.end());
      INFO("cut at " << cut);
      CHECK(second.last == DecodeResult::kNeedMore);
      CHECK(first.requests == whole.requests);
    }
    // And one byte at a time.
    RequestDecoder d;
    std::vector<Request> got;
    for (char c : stream) {
      Decoded step = DecodeAll(d, std::string(1, c));
      got.insert(got.end(), step.requests.begin(), step.requests.end());
    }
    CHECK(got == whole.requests);
    CHECK(d.buffered_bytes() == 0);
  }
}

TEST_CASE("a decoder holds a large value's bytes once, and releases them after",
          "[store][codec][limits]") {
  // A modern SET of an 8 MiB value, fed in socket-sized pieces.
  const std::string value(8 << 20, 'v');
  const std::string stream = U8(0) + U32(kValidationMagic) + U8(1) + Str("/big") + Str(value);
  RequestDecoder d;
  size_t peak = 0;
  Decoded all;
  for (size_t at = 0; at < stream.size(); at += 64 * 1024) {
    Decoded step = DecodeAll(d, stream.substr(at, 64 * 1024));
    all.requests.insert(all.requests.end(), step.requests.begin(), step.requests.end());
    peak = std::max(peak, d.held_bytes());
  }
  REQUIRE(all.requests.size() == 2);
  CHECK(all.requests[1].values[0] == value);
  // The body is buffered in one allocation of its size (not grown to up to
  // twice that by doubling) and counted once more while announced.
  CHECK(peak <= 2 * value.size() + 128 * 1024);
  // Once decoded, the buffer is given back at the next read.
  d.Feed(std::string_view());
  CHECK(d.held_bytes() <= 64 * 1024);
}

TEST_CASE("a value's last piece read with the next request does not double the buffer",
          "[store][codec][limits]") {
  // The store's integration test saw a 4 MiB SET held as 8 MiB (and its
  // connection closed for it) when one read carried the value's end and the
  // next request: appended past the reserved size, the buffer doubled.
  const std::string value(4 << 20, 'p');
  const std::string set = U8(0) + U32(kValidationMagic) + U8(1) + Str("/partial") + Str(value);
  const std::string next = U8(1) + Str("/k") + Str("v");
  RequestDecoder d;
  const size_t tail = 1 << 20;  // the value's last MiB and the next request arrive together
  size_t at = 0;
  for (; at + 64 * 1024 <= set.size() - tail; at += 64 * 1024)
    DecodeAll(d, set.substr(at, 64 * 1024));
  DecodeAll(d, set.substr(at, set.size() - tail - at));
  d.Feed(set.substr(set.size() - tail) + next);
  // Buffer: the header, the value and the next request, not twice the value.
  CHECK(d.held_bytes() <= value.size() + 64 * 1024);
  const Decoded rest = DecodeAll(d, "");
  REQUIRE(rest.requests.size() == 2);
  CHECK(rest.requests[0].values[0] == value);
  CHECK(rest.requests[1].keys[0] == "/k");
}

TEST_CASE("truncated input yields need-more and no request", "[store][codec]") {
  const std::string set = U8(0) + Str("key") + Str("value");
  for (size_t len = 0; len < set.size(); ++len) {
    Decoded d = DecodeAll(set.substr(0, len));
    INFO("prefix length " << len);
    CHECK(d.last == DecodeResult::kNeedMore);
    CHECK(d.requests.empty());
  }
}

TEST_CASE("a partial request stays buffered until its last byte", "[store][codec]") {
  RequestDecoder d;
  d.Feed(U8(0) + Str("k") + U64(5) + "abc");
  CHECK(d.Next().state == DecodeResult::kNeedMore);
  d.Feed(std::string("de") + U8(6));
  DecodeResult r = d.Next();
  REQUIRE(r.state == DecodeResult::kRequest);
  CHECK(r.request == Make(Op::kSet, {"k"}, {"abcde"}));
  CHECK(d.Next().request == Make(Op::kGetNumKeys));
  CHECK(d.Next().state == DecodeResult::kNeedMore);
}

// ---------------------------------------------------------------- bounds

TEST_CASE("an oversized key length is rejected without allocating", "[store][codec]") {
  RequestDecoder d;
  // Only the query byte and the 8-byte length arrive: the decision must not
  // wait for (or reserve room for) a 2^62-byte body.
  d.Feed(U8(0) + U64(1ull << 62));
  DecodeResult r = d.Next();
  CHECK(r.state == DecodeResult::kError);
  CHECK(r.error.find("key too large") != std::string::npos);
  CHECK(r.error.find("length=4611686018427387904") != std::string::npos);
  CHECK(d.buffered_bytes() == 0);
}

TEST_CASE("limits on values, key counts and whole requests are enforced", "[store][codec]") {
  DecoderLimits limits;
  limits.max_string_bytes = 16;
  limits.max_keys = 3;
  limits.max_request_bytes = 64;

  SECTION("a value one byte over the limit") {
    Decoded d = DecodeAll(U8(0) + Str("k") + U64(17), limits);
    CHECK(d.last == DecodeResult::kError);
    CHECK(d.error.find("value too large") != std::string::npos);
  }
  SECTION("a value exactly at the limit is fine") {
    Decoded d = DecodeAll(U8(0) + Str("k") + Str(std::string(16, 'x')), limits);
    CHECK(d.requests.size() == 1);
    CHECK(d.last == DecodeResult::kNeedMore);
  }
  SECTION("too many keys in a WAIT") {
    Decoded d = DecodeAll(U8(5) + U64(4), limits);
    CHECK(d.last == DecodeResult::kError);
    CHECK(d.error.find("too many keys") != std::string::npos);
  }
  SECTION("a request whose strings together exceed the request limit") {
    const std::string k = Str(std::string(16, 'k'));  // 24 bytes each
    Decoded d = DecodeAll(U8(5) + U64(3) + k + k + k, limits);
    CHECK(d.last == DecodeResult::kError);
    CHECK(d.error.find("request too large") != std::string::npos);
  }
}

TEST_CASE("a decode error is sticky and later bytes are ignored", "[store][codec]") {
  RequestDecoder d;
  d.Feed(Hex("ff"));
  DecodeResult first = d.Next();
  REQUIRE(first.state == DecodeResult::kError);
  d.Feed(Hex("06"));
  DecodeResult second = d.Next();
  CHECK(second.state == DecodeResult::kError);
  CHECK(second.error == first.error);
  CHECK(d.buffered_bytes() == 0);
}

TEST_CASE("garbage after valid requests keeps the valid ones", "[store][codec]") {
  Decoded d = DecodeAll(U8(6) + U8(2) + Str("k") + "\xee\xee\xee");
  CHECK(d.requests.size() == 2);
  CHECK(d.last == DecodeResult::kError);
}

TEST_CASE("a query byte maps back to its operation in every dialect", "[store][codec]") {
  for (Dialect dialect : {Dialect::kLegacy, Dialect::kTorch21, Dialect::kModern}) {
    INFO("dialect=" << DialectName(dialect));
    for (int wire = 0; wire < 256; ++wire) {
      const std::optional<Op> op = OpFromWire(dialect, static_cast<uint8_t>(wire));
      if (op) CHECK(OpToWire(dialect, *op) == std::optional<uint8_t>(wire));
    }
  }
  // The captured torch 1.13 query bytes the runtime's client sends.
  CHECK(OpToWire(Dialect::kLegacy, Op::kSet) == std::optional<uint8_t>(0));
  CHECK(OpToWire(Dialect::kLegacy, Op::kWait) == std::optional<uint8_t>(5));
  CHECK(OpToWire(Dialect::kLegacy, Op::kDeleteKey) == std::optional<uint8_t>(8));
  CHECK(OpToWire(Dialect::kModern, Op::kSet) == std::optional<uint8_t>(1));
}

TEST_CASE("an operation a dialect lacks has no query byte in it", "[store][codec]") {
  CHECK_FALSE(OpToWire(Dialect::kLegacy, Op::kAppend).has_value());
  CHECK_FALSE(OpToWire(Dialect::kLegacy, Op::kPing).has_value());
  CHECK_FALSE(OpToWire(Dialect::kModern, Op::kWatchKey).has_value());
  CHECK_FALSE(OpToWire(Dialect::kTorch21, Op::kWatchKey).has_value());
  CHECK_FALSE(OpToWire(Dialect::kTorch21, Op::kPing).has_value());
  CHECK_FALSE(OpToWire(Dialect::kTorch21, Op::kQueuePush).has_value());
  CHECK_FALSE(OpToWire(Dialect::kUnknown, Op::kSet).has_value());
}

// ---------------------------------------------------------------- encoders

TEST_CASE("responses encode as torch expects them", "[store][codec]") {
  std::string out;
  SECTION("bytes: uint64 length then the bytes (captured GET reply)") {
    EncodeBytes("v1", &out);
    CHECK(out == Hex("0200000000000000 7631"));
  }
  SECTION("empty bytes") {
    EncodeBytes("", &out);
    CHECK(out == U64(0));
  }
  SECTION("int64 (captured ADD replies)") {
    EncodeInt64(5, &out);
    EncodeInt64(-2, &out);
    CHECK(out == Hex("0500000000000000 feffffffffffffff"));
  }
  SECTION("uint64 key count, and its decoder") {
    EncodeUint64(0x0102030405060708ull, &out);
    CHECK(out == Hex("0807060504030201"));
    CHECK(DecodeUint64(out) == 0x0102030405060708ull);
  }
  SECTION("int64 decodes what it encodes") {
    EncodeInt64(-2, &out);
    CHECK(DecodeInt64(out) == -2);
  }
  SECTION("uint32 nonce") {
    EncodeUint32(0x01020304, &out);
    CHECK(out == Hex("04030201"));
  }
  SECTION("one byte: STOP_WAITING, CHECK results, WAIT_CANCELED") {
    EncodeByte(kStopWaiting, &out);
    EncodeByte(kCheckNotReady, &out);
    EncodeByte(kWaitCanceled, &out);
    CHECK(out == Hex("00 01 01"));
  }
}

}  // namespace
}  // namespace muster::store

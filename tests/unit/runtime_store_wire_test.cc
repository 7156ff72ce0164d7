// The client's request bytes must be exactly what torch 1.13's client sends
// (the literals marked "captured" in store_codec_tests.cc) and what muster's
// worker store decodes; replies are decoded incrementally without reading
// past their end.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "store/tcpstore_codec.h"
#include "store_wire_bytes.h"
#include "worker_runtime/store/store_wire.h"

namespace muster::runtime::store_wire {
namespace {

using muster::store::Dialect;
using muster::store::kCheckNotReady;
using muster::store::Op;
using muster::store::Request;
using muster::store::RequestDecoder;
using muster::store::testing::Hex;
using muster::store::testing::I64;
using muster::store::testing::Str;
using muster::store::testing::U64;
using muster::store::testing::U8;

// What muster's store decodes from `bytes`, which must be exactly one
// legacy request.
Request DecodeOne(const std::string& bytes) {
  RequestDecoder decoder;
  decoder.Feed(bytes);
  auto result = decoder.Next();
  REQUIRE(result.state == muster::store::DecodeResult::kRequest);
  CHECK(decoder.dialect() == Dialect::kLegacy);
  CHECK(decoder.buffered_bytes() == 0);
  return result.request;
}

TEST_CASE("requests match torch 1.13's captured bytes") {
  CHECK(EncodeSet("/k1", "v1") == Hex("00 0300000000000000 2f6b31 0200000000000000 7631"));
  CHECK(EncodeCompareSet("/c1", "", "new") ==
        Hex("01 0300000000000000 2f6331 0000000000000000 0300000000000000 6e6577"));
  CHECK(EncodeGet("/k1") == Hex("02 0300000000000000 2f6b31"));
  CHECK(EncodeAdd("/cnt", -2) == Hex("03 0400000000000000 2f636e74 feffffffffffffff"));
  CHECK(EncodeWait({"/k1", "/cnt"}) ==
        Hex("05 0200000000000000 0300000000000000 2f6b31 0400000000000000 2f636e74"));
  CHECK(EncodeDeleteKey("/k1") == Hex("08 0300000000000000 2f6b31"));
  CHECK(EncodeCheck({"a", "bb"}) == U8(4) + U64(2) + Str("a") + Str("bb"));
}

TEST_CASE("the worker store decodes every request the client encodes") {
  const std::string binary("\0\xff\x01k", 4);
  CHECK(DecodeOne(EncodeSet("muster/0/a", binary)) ==
        Request{Op::kSet, {"muster/0/a"}, {binary}, 0, 0});
  CHECK(DecodeOne(EncodeCompareSet("k", "old", "new")) ==
        Request{Op::kCompareSet, {"k"}, {"old", "new"}, 0, 0});
  CHECK(DecodeOne(EncodeGet("k")) == Request{Op::kGet, {"k"}, {}, 0, 0});
  CHECK(DecodeOne(EncodeAdd("n", INT64_MIN)) == Request{Op::kAdd, {"n"}, {}, INT64_MIN, 0});
  CHECK(DecodeOne(EncodeCheck({"a", "b", "c"})) == Request{Op::kCheck, {"a", "b", "c"}, {}, 0, 0});
  CHECK(DecodeOne(EncodeWait({"w"})) == Request{Op::kWait, {"w"}, {}, 0, 0});
  CHECK(DecodeOne(EncodeDeleteKey("d")) == Request{Op::kDeleteKey, {"d"}, {}, 0, 0});
}

TEST_CASE("a SET as the first request of a connection is not taken for a modern handshake") {
  // 0x00 opens both a legacy SET and a modern VALIDATE; the store tells them
  // apart by the next four bytes, which for a SET are the key length.
  RequestDecoder decoder;
  decoder.Feed(EncodeSet("k", "v") + EncodeGet("k"));
  auto first = decoder.Next();
  REQUIRE(first.state == muster::store::DecodeResult::kRequest);
  CHECK(decoder.dialect() == Dialect::kLegacy);
  CHECK(first.request.op == Op::kSet);
  CHECK(decoder.Next().request.op == Op::kGet);
}

TEST_CASE("a bytes reply is read in exactly its length, never past it") {
  ReplyDecoder reply(ReplyType::kBytes);
  CHECK(reply.BytesWanted() == 8);
  const std::string wire = U64(5) + "hello";
  reply.Feed(wire.substr(0, 3));
  CHECK(reply.BytesWanted() == 5);
  reply.Feed(wire.substr(3, 5));
  CHECK(reply.BytesWanted() == 5);  // the body, announced by the length
  CHECK_FALSE(reply.done());
  reply.Feed("hell");
  CHECK(reply.BytesWanted() == 1);
  reply.Feed("o");
  REQUIRE(reply.done());
  CHECK(reply.BytesWanted() == 0);
  CHECK(reply.TakeBytes() == "hello");
}

TEST_CASE("an empty bytes reply is complete after its length") {
  ReplyDecoder reply(ReplyType::kBytes);
  reply.Feed(U64(0));
  REQUIRE(reply.done());
  CHECK(reply.TakeBytes().empty());
}

TEST_CASE("int64 and byte replies decode little-endian values") {
  ReplyDecoder number(ReplyType::kInt64);
  CHECK(number.BytesWanted() == 8);
  number.Feed(I64(-42));
  REQUIRE(number.done());
  CHECK(number.number() == -42);

  ReplyDecoder byte(ReplyType::kByte);
  CHECK(byte.BytesWanted() == 1);
  byte.Feed(U8(kCheckNotReady));
  REQUIRE(byte.done());
  CHECK(byte.byte() == kCheckNotReady);
}

TEST_CASE("a bytes reply announcing more than the limit fails before allocating") {
  ReplyDecoder reply(ReplyType::kBytes, /*max_bytes=*/16);
  reply.Feed(U64(17));
  CHECK(reply.failed());
  CHECK_FALSE(reply.done());
  CHECK(reply.BytesWanted() == 0);
  CHECK(reply.error() == "reply announces 17 bytes, more than the 16 accepted");

  ReplyDecoder at_limit(ReplyType::kBytes, 16);
  at_limit.Feed(U64(16));
  CHECK_FALSE(at_limit.failed());
  CHECK(at_limit.BytesWanted() == 16);
}

}  // namespace
}  // namespace muster::runtime::store_wire

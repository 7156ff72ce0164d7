// The rendezvous frame decoder against literal bytes: splits, bounds, errors.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "rendezvous/protocol/frame_codec.h"

namespace muster::rdzv {
namespace {

struct Frame {
  uint8_t type;
  std::string payload;
  bool operator==(const Frame&) const = default;
};

// The four length bytes of N, little-endian.
std::string LengthPrefix(uint32_t n) {
  return {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
          static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
}

// Drains every complete frame; `last` is the result that stopped the loop.
std::vector<Frame> Drain(FrameDecoder& decoder, FrameResult* last = nullptr) {
  std::vector<Frame> frames;
  for (;;) {
    FrameResult r = decoder.Next();
    if (r.state != FrameResult::kFrame) {
      if (last != nullptr) *last = r;
      return frames;
    }
    frames.push_back({r.type, std::string(r.payload)});
  }
}

TEST_CASE("a frame is a little-endian length, a type byte and the payload") {
  CHECK(EncodeFrame(0x02, "{}") == std::string("\x03\x00\x00\x00\x02{}", 7));
  CHECK(EncodeFrame(0x81, "") == std::string("\x01\x00\x00\x00\x81", 5));
}

TEST_CASE("the first frame is held to its own bound, later frames to max_frame_bytes") {
  FrameDecoder decoder(/*max_frame_bytes=*/100, /*max_first_frame_bytes=*/10);
  // A first frame of 10 passes, and then one of 100, in the same feed.
  decoder.Feed(EncodeFrame(1, std::string(9, 'h')) + EncodeFrame(2, std::string(99, 'j')));
  FrameResult last;
  CHECK(Drain(decoder, &last).size() == 2);
  CHECK(last.state == FrameResult::kNeedMore);

  FrameDecoder stranger(100, 10);
  stranger.Feed(LengthPrefix(11));
  CHECK(stranger.failed());
  CHECK(stranger.buffered_bytes() == 0);  // nothing of it is kept
  const FrameResult refused = stranger.Next();
  CHECK(refused.state == FrameResult::kError);
  CHECK(refused.error == FrameError::kOversized);
  CHECK(refused.message ==
        "oversized first frame: length=11 max_first_frame_bytes=10 (the Hello comes first)");
}

TEST_CASE("a frame fed in one piece decodes to its type and payload") {
  FrameDecoder decoder;
  decoder.Feed(EncodeFrame(0x07, R"({"run_id":"r"})"));
  FrameResult r = decoder.Next();
  REQUIRE(r.state == FrameResult::kFrame);
  CHECK(r.type == 0x07);
  CHECK(r.payload == R"({"run_id":"r"})");
  CHECK(decoder.Next().state == FrameResult::kNeedMore);
  CHECK(decoder.buffered_bytes() == 0);
}

TEST_CASE("a frame with an empty payload carries only its type byte") {
  FrameDecoder decoder;
  decoder.Feed(EncodeFrame(0x05, ""));
  CHECK(Drain(decoder) == std::vector<Frame>{{0x05, ""}});
}

TEST_CASE("a frame split at every byte boundary decodes the same") {
  const std::string frame = EncodeFrame(0x03, R"({"generation":7,"node_id":"n1"})");
  for (size_t cut = 0; cut <= frame.size(); ++cut) {
    CAPTURE(cut);
    FrameDecoder decoder;
    decoder.Feed(std::string_view(frame).substr(0, cut));
    FrameResult last;
    std::vector<Frame> early = Drain(decoder, &last);
    CHECK(early.size() == (cut == frame.size() ? 1u : 0u));
    CHECK(last.state == FrameResult::kNeedMore);
    decoder.Feed(std::string_view(frame).substr(cut));
    std::vector<Frame> late = Drain(decoder);
    early.insert(early.end(), late.begin(), late.end());
    CHECK(early == std::vector<Frame>{{0x03, R"({"generation":7,"node_id":"n1"})"}});
  }
}

TEST_CASE("frames fed one byte at a time decode in order") {
  const std::string bytes =
      EncodeFrame(0x01, "a") + EncodeFrame(0x02, "") + EncodeFrame(0x83, "bc");
  FrameDecoder decoder;
  std::vector<Frame> frames;
  for (char c : bytes) {
    decoder.Feed(std::string_view(&c, 1));
    for (const Frame& f : Drain(decoder)) frames.push_back(f);
  }
  CHECK(frames == std::vector<Frame>{{0x01, "a"}, {0x02, ""}, {0x83, "bc"}});
}

TEST_CASE("several frames in one feed all decode, a trailing partial one waits") {
  const std::string third = EncodeFrame(0x03, "xyz");
  FrameDecoder decoder;
  decoder.Feed(EncodeFrame(0x01, "one") + EncodeFrame(0x02, "two") + third.substr(0, 6));
  FrameResult last;
  CHECK(Drain(decoder, &last) == std::vector<Frame>{{0x01, "one"}, {0x02, "two"}});
  CHECK(last.state == FrameResult::kNeedMore);
  CHECK(decoder.buffered_bytes() == 6);
  decoder.Feed(third.substr(6));
  CHECK(Drain(decoder) == std::vector<Frame>{{0x03, "xyz"}});
}

TEST_CASE("a truncated frame stays need-more and keeps its bytes") {
  const std::string frame = EncodeFrame(0x02, R"({"run_id":"r"})");
  FrameDecoder decoder;
  decoder.Feed(frame.substr(0, frame.size() - 1));
  for (int i = 0; i < 3; ++i) CHECK(decoder.Next().state == FrameResult::kNeedMore);
  CHECK_FALSE(decoder.failed());
  CHECK(decoder.buffered_bytes() == frame.size() - 1);
}

TEST_CASE("an oversized length is refused after its 4 bytes, before any payload is buffered") {
  FrameDecoder decoder(/*max_frame_bytes=*/100);
  decoder.Feed(LengthPrefix(101));
  FrameResult r = decoder.Next();
  REQUIRE(r.state == FrameResult::kError);
  CHECK(r.error == FrameError::kOversized);
  CHECK(r.message == "oversized frame: length=101 max_frame_bytes=100");
  CHECK(decoder.buffered_bytes() == 0);

  SECTION("payload bytes after the bad prefix are dropped, not buffered") {
    decoder.Feed(std::string(10000, 'x'));
    CHECK(decoder.buffered_bytes() == 0);
    CHECK(decoder.allocated_bytes() < 1000);
  }
}

TEST_CASE("an oversized length is refused even when its payload arrives in the same feed") {
  FrameDecoder decoder;
  decoder.Feed(LengthPrefix(0xffffffff) + std::string(1 << 16, 'x'));
  CHECK(decoder.buffered_bytes() == 0);
  CHECK(decoder.allocated_bytes() < 1000);
  FrameResult r = decoder.Next();
  REQUIRE(r.state == FrameResult::kError);
  CHECK(r.error == FrameError::kOversized);
  CHECK(r.message == "oversized frame: length=4294967295 max_frame_bytes=1048576");
}

TEST_CASE("a frame of exactly max_frame_bytes is accepted") {
  FrameDecoder decoder(/*max_frame_bytes=*/10);
  decoder.Feed(EncodeFrame(0x01, std::string(9, 'p')));
  CHECK(Drain(decoder) == std::vector<Frame>{{0x01, std::string(9, 'p')}});
}

TEST_CASE("a zero length is refused as an empty frame") {
  FrameDecoder decoder;
  decoder.Feed(LengthPrefix(0) + "\x01{}");
  FrameResult r = decoder.Next();
  REQUIRE(r.state == FrameResult::kError);
  CHECK(r.error == FrameError::kEmpty);
  CHECK(r.message == "empty frame: length=0, a frame holds at least its type byte");
}

TEST_CASE("an error is sticky: later bytes, even a valid frame, are ignored") {
  FrameDecoder decoder;
  decoder.Feed(LengthPrefix(0));
  CHECK(decoder.Next().state == FrameResult::kError);
  decoder.Feed(EncodeFrame(0x01, "{}"));
  for (int i = 0; i < 3; ++i) {
    FrameResult r = decoder.Next();
    CHECK(r.state == FrameResult::kError);
    CHECK(r.error == FrameError::kEmpty);
  }
  CHECK(decoder.failed());
}

TEST_CASE("frames before a bad prefix are delivered before the error") {
  FrameDecoder decoder;
  decoder.Feed(EncodeFrame(0x01, "{}") + LengthPrefix(0));
  FrameResult last;
  CHECK(Drain(decoder, &last) == std::vector<Frame>{{0x01, "{}"}});
  CHECK(last.state == FrameResult::kError);
}

TEST_CASE("garbage bytes such as an HTTP request are refused after 4 bytes") {
  FrameDecoder decoder;
  decoder.Feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  FrameResult r = decoder.Next();
  REQUIRE(r.state == FrameResult::kError);
  CHECK(r.error == FrameError::kOversized);  // "GET " is 0x20544547 little-endian
  CHECK(decoder.buffered_bytes() == 0);
}

TEST_CASE("a maximum-size frame fed byte by byte never allocates much beyond its size") {
  constexpr uint32_t kMax = 1u << 20;
  const std::string frame = EncodeFrame(0x87, std::string(kMax - 1, 'j'));
  FrameDecoder decoder(kMax);
  size_t most = 0;
  for (size_t i = 0; i < frame.size(); i += 997) {
    decoder.Feed(std::string_view(frame).substr(i, 997));
    most = std::max(most, decoder.allocated_bytes());
    if (i + 997 < frame.size()) REQUIRE(decoder.Next().state == FrameResult::kNeedMore);
  }
  CHECK(most <= kMax + 2 * kFrameLengthBytes);
  FrameResult r = decoder.Next();
  REQUIRE(r.state == FrameResult::kFrame);
  CHECK(r.payload.size() == kMax - 1);
}

TEST_CASE("a decoder gives back a large buffer once its frame is consumed") {
  FrameDecoder decoder;
  decoder.Feed(EncodeFrame(0x87, std::string(500000, 'j')));
  REQUIRE(decoder.Next().state == FrameResult::kFrame);
  decoder.Feed(EncodeFrame(0x03, "{}"));
  CHECK(decoder.allocated_bytes() < 64 * 1024);
  CHECK(Drain(decoder) == std::vector<Frame>{{0x03, "{}"}});
}

}  // namespace
}  // namespace muster::rdzv

// Fuzzes FrameDecoder (rendezvous/protocol/frame_codec.h): the bytes a peer
// sends to musterd or an agent, before any JSON is looked at.
//
// Input: byte 0 picks max_frame_bytes (1, 2, 5, 16, 300 or the default 1 MiB),
// byte 1 seeds how the stream is split into Feed() calls (0: all at once),
// the rest is the stream.
//
// Invariants beyond "no crash, no sanitizer report":
//   - fed whole and fed in chunks (draining Next() after each), the decoder
//     returns the same frames and the same error;
//   - re-encoding the frames with EncodeFrame() gives back the input's bytes
//     exactly, up to where decoding stopped; what stopped it is either the
//     end of the input (buffered_bytes() is the rest) or, for an error, the
//     4-byte prefix right after the last frame, whose value the error names:
//     0 for kEmpty, > max_frame_bytes for kOversized;
//   - every frame's N (type byte + payload) is within max_frame_bytes;
//   - an error has a non-empty message and is sticky: Next() repeats it;
//   - memory: with Next() drained after every chunk, the decoder's buffer
//     never holds more than 64 KiB (what it may retain) or the largest chunk
//     plus two frames' worth (max_frame_bytes + 4 each, the contract of
//     frame_codec.h, plus the next prefix).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/protocol/frame_codec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using muster::rdzv::FrameDecoder;
using muster::rdzv::FrameError;
using muster::rdzv::FrameResult;

struct Frame {
  uint8_t type;
  std::string payload;
  bool operator==(const Frame&) const = default;
};

struct Outcome {
  std::vector<Frame> frames;
  FrameResult::State last = FrameResult::kNeedMore;
  FrameError error = FrameError::kNone;
  std::string message;
  size_t buffered = 0;
};

// Takes every complete frame; true once the decoder reported an error.
bool Drain(FrameDecoder& decoder, uint32_t max_frame_bytes, Outcome& out) {
  for (;;) {
    FrameResult r = decoder.Next();
    out.last = r.state;
    if (r.state == FrameResult::kNeedMore) return false;
    if (r.state == FrameResult::kError) {
      FUZZ_CHECK(!r.message.empty(), "an error without a message");
      FUZZ_CHECK(r.error != FrameError::kNone, "kError with FrameError::kNone");
      FUZZ_CHECK(decoder.failed(), "kError but failed() is false");
      FrameResult again = decoder.Next();
      FUZZ_CHECK(again.state == FrameResult::kError && again.error == r.error &&
                     again.message == r.message,
                 "the error is not sticky: " + r.message + " then " + again.message);
      out.error = r.error;
      out.message = r.message;
      return true;
    }
    FUZZ_CHECK(r.payload.size() + 1 <= max_frame_bytes,
               "a frame of " + std::to_string(r.payload.size() + 1) + " bytes passed max " +
                   std::to_string(max_frame_bytes));
    out.frames.push_back({r.type, std::string(r.payload)});
  }
}

Outcome DecodeWhole(std::string_view stream, uint32_t max_frame_bytes) {
  FrameDecoder decoder(max_frame_bytes);
  decoder.Feed(stream);
  Outcome out;
  Drain(decoder, max_frame_bytes, out);
  out.buffered = decoder.buffered_bytes();
  return out;
}

Outcome DecodeChunked(std::string_view stream, uint32_t max_frame_bytes, uint8_t seed) {
  FrameDecoder decoder(max_frame_bytes);
  muster::fuzz::Chunker chunker(seed);
  Outcome out;
  size_t largest_chunk = 0;
  for (size_t at = 0; at < stream.size();) {
    const size_t size = chunker.Next(stream.size() - at);
    largest_chunk = std::max(largest_chunk, size);
    decoder.Feed(stream.substr(at, size));
    at += size;
    const size_t bound =
        std::max<size_t>(64 * 1024, largest_chunk + 2 * (size_t{max_frame_bytes} + 4) + 4);
    FUZZ_CHECK(decoder.allocated_bytes() <= bound, "the decoder holds " +
                                                       std::to_string(decoder.allocated_bytes()) +
                                                       " bytes, over " + std::to_string(bound));
    if (Drain(decoder, max_frame_bytes, out)) break;
  }
  out.buffered = decoder.buffered_bytes();
  return out;
}

uint32_t ReadLength(std::string_view four) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(four[static_cast<size_t>(i)]);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return -1;
  constexpr std::array<uint32_t, 6> kMaxFrameBytes = {1,  2,   5,
                                                      16, 300, muster::rdzv::kDefaultMaxFrameBytes};
  const uint32_t max_frame_bytes = kMaxFrameBytes[data[0] % kMaxFrameBytes.size()];
  const uint8_t seed = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  const Outcome whole = DecodeWhole(stream, max_frame_bytes);
  const Outcome chunked = DecodeChunked(stream, max_frame_bytes, seed);
  FUZZ_CHECK(whole.frames == chunked.frames && whole.error == chunked.error &&
                 whole.message == chunked.message,
             "whole and chunked decoding differ: " + std::to_string(whole.frames.size()) + " vs " +
                 std::to_string(chunked.frames.size()) + " frames, '" + whole.message + "' vs '" +
                 chunked.message + "'");

  std::string encoded;
  for (const Frame& frame : whole.frames) {
    encoded += muster::rdzv::EncodeFrame(frame.type, frame.payload);
  }
  FUZZ_CHECK(stream.starts_with(encoded), "re-encoded frames are not the input's bytes");
  const std::string_view rest = stream.substr(encoded.size());
  if (whole.error == FrameError::kNone) {
    FUZZ_CHECK(whole.buffered == rest.size(), "buffered_bytes() " + std::to_string(whole.buffered) +
                                                  " but " + std::to_string(rest.size()) +
                                                  " bytes follow the last frame");
    // Whatever is left is a frame still incomplete: a prefix too short to
    // judge, or a valid prefix whose body has not all arrived.
    if (rest.size() >= 4) {
      const uint32_t length = ReadLength(rest);
      FUZZ_CHECK(length >= 1 && length <= max_frame_bytes && rest.size() < 4 + size_t{length},
                 "a complete or invalid frame was left undecoded: " +
                     muster::fuzz::Printable(rest.substr(0, 16)));
    }
  } else {
    FUZZ_CHECK(whole.buffered == 0, "bytes kept after an error");
    FUZZ_CHECK(rest.size() >= 4, "an error without a complete bad prefix");
    const uint32_t length = ReadLength(rest);
    if (whole.error == FrameError::kEmpty) {
      FUZZ_CHECK(length == 0, "kEmpty for length " + std::to_string(length));
    } else {
      FUZZ_CHECK(length > max_frame_bytes, "kOversized for length " + std::to_string(length));
      FUZZ_CHECK(whole.message.find(std::to_string(length)) != std::string::npos,
                 "the error does not quote the length: " + whole.message);
    }
  }
  return 0;
}

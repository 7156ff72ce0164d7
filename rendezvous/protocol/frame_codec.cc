#include "rendezvous/protocol/frame_codec.h"

#include <algorithm>
#include <cassert>
#include <limits>

namespace muster::rdzv {
namespace {

// A connection that once received a large frame should not pin that buffer for
// the rest of its life: a thousand idle agents would hold 1 MiB each.
constexpr size_t kRetainBytes = 64 * 1024;
// Smallest allocation, so a stream of tiny frames does not reallocate per byte.
constexpr size_t kMinAllocation = 256;

uint32_t ReadLength(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

FrameDecoder::FrameDecoder(uint32_t max_frame_bytes, uint32_t max_first_frame_bytes)
    : max_frame_bytes_(max_frame_bytes),
      max_first_frame_bytes_(max_first_frame_bytes == 0
                                 ? max_frame_bytes
                                 : std::min(max_first_frame_bytes, max_frame_bytes)) {
  assert(max_frame_bytes >= 1);
}

void FrameDecoder::Feed(std::string_view bytes) {
  Feed(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

void FrameDecoder::Feed(std::span<const uint8_t> bytes) {
  if (failed()) return;
  Compact();
  const uint8_t* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    size_t take;
    if (buffer_.size() < next_header_) {
      // Inside a frame whose length prefix was already accepted.
      take = std::min(left, next_header_ - buffer_.size());
      Append(data, take);
    } else {
      // Collect the next length prefix and judge it before taking any byte
      // after it: an oversized frame must not be buffered at all.
      take = std::min(left, kFrameLengthBytes - (buffer_.size() - next_header_));
      Append(data, take);
      if (buffer_.size() - next_header_ == kFrameLengthBytes) {
        const uint32_t length = ReadLength(buffer_.data() + next_header_);
        if (length == 0) return Fail(FrameError::kEmpty, length);
        if (length > (first_judged_ ? max_frame_bytes_ : max_first_frame_bytes_)) {
          return Fail(FrameError::kOversized, length);
        }
        first_judged_ = true;
        next_header_ += kFrameLengthBytes + length;
      }
    }
    data += take;
    left -= take;
  }
}

FrameResult FrameDecoder::Next() {
  FrameResult result;
  if (pos_ < next_header_ && buffer_.size() - pos_ >= kFrameLengthBytes) {
    const uint32_t length = ReadLength(buffer_.data() + pos_);
    const size_t end = pos_ + kFrameLengthBytes + length;
    if (end <= buffer_.size()) {
      const uint8_t* body = buffer_.data() + pos_ + kFrameLengthBytes;
      result.state = FrameResult::kFrame;
      result.type = body[0];
      result.payload = std::string_view(reinterpret_cast<const char*>(body + 1), length - 1);
      pos_ = end;
      return result;
    }
  }
  // Frames that arrived before a bad prefix are still delivered first: the
  // peer may have sent a valid Hello before the garbage.
  if (failed() && pos_ == buffer_.size()) {
    result.state = FrameResult::kError;
    result.error = error_;
    result.message = error_message_;
  }
  return result;
}

void FrameDecoder::Append(const uint8_t* data, size_t size) {
  const size_t needed = buffer_.size() + size;
  if (needed > buffer_.capacity()) {
    // Grow geometrically, but never past the end of the frame being received
    // (plus the next prefix): std::vector's own growth could double a 1 MiB
    // frame's buffer, and reserving a whole announced length up front would
    // let a peer make us allocate by merely announcing.
    const size_t limit = std::max(needed, next_header_ + kFrameLengthBytes);
    const size_t grown = std::max(2 * buffer_.capacity(), kMinAllocation);
    buffer_.reserve(std::clamp(grown, needed, limit));
  }
  buffer_.insert(buffer_.end(), data, data + size);
}

void FrameDecoder::Compact() {
  if (pos_ == 0) return;
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(pos_));
  next_header_ -= pos_;
  pos_ = 0;
  if (buffer_.capacity() > kRetainBytes && buffer_.size() <= kRetainBytes) {
    buffer_ = std::vector<uint8_t>(buffer_.begin(), buffer_.end());
  }
}

void FrameDecoder::Fail(FrameError error, uint32_t length) {
  buffer_.resize(next_header_);  // drop the bad prefix; earlier frames stay
  error_ = error;
  if (error == FrameError::kEmpty) {
    error_message_ = "empty frame: length=0, a frame holds at least its type byte";
  } else if (!first_judged_ && max_first_frame_bytes_ < max_frame_bytes_) {
    error_message_ = "oversized first frame: length=" + std::to_string(length) +
                     " max_first_frame_bytes=" + std::to_string(max_first_frame_bytes_) +
                     " (the Hello comes first)";
  } else {
    error_message_ = "oversized frame: length=" + std::to_string(length) +
                     " max_frame_bytes=" + std::to_string(max_frame_bytes_);
  }
}

std::string EncodeFrame(uint8_t type, std::string_view payload) {
  assert(payload.size() < std::numeric_limits<uint32_t>::max());
  const auto length = static_cast<uint32_t>(payload.size() + 1);
  std::string frame;
  frame.reserve(kFrameLengthBytes + length);
  for (int shift = 0; shift < 32; shift += 8) {
    frame.push_back(static_cast<char>((length >> shift) & 0xff));
  }
  frame.push_back(static_cast<char>(type));
  frame.append(payload);
  return frame;
}

}  // namespace muster::rdzv

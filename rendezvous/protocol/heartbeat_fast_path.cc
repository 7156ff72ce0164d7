#include "rendezvous/protocol/heartbeat_fast_path.h"

#include <cstdint>

#include "rendezvous/protocol/message_codec.h"

namespace muster::rdzv {
namespace {

bool Consume(std::string_view& in, std::string_view literal) {
  if (in.substr(0, literal.size()) != literal) return false;
  in.remove_prefix(literal.size());
  return true;
}

// A JSON string without escapes and with printable ASCII only, so its bytes
// are its value and it is valid UTF-8.
std::optional<std::string_view> PlainString(std::string_view& in) {
  size_t i = 0;
  while (i < in.size() && in[i] != '"') {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (c < 0x20 || c > 0x7e || c == '\\') return std::nullopt;
    ++i;
  }
  if (i == in.size() || i > kMaxShortStringBytes) return std::nullopt;
  std::string_view value = in.substr(0, i);
  in.remove_prefix(i + 1);
  return value;
}

std::optional<uint64_t> PlainUnsigned(std::string_view& in) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < in.size() && in[i] >= '0' && in[i] <= '9') {
    const uint64_t digit = static_cast<uint64_t>(in[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0 || (i > 1 && in[0] == '0')) return std::nullopt;
  in.remove_prefix(i);
  return value;
}

}  // namespace

std::optional<HeartbeatView> DecodePlainHeartbeatView(std::string_view in) {
  if (!Consume(in, "{\"generation\":")) return std::nullopt;
  auto generation = PlainUnsigned(in);
  if (!generation || !Consume(in, ",\"node_id\":\"")) return std::nullopt;
  auto node_id = PlainString(in);
  if (!node_id || !Consume(in, ",\"run_id\":\"")) return std::nullopt;
  auto run_id = PlainString(in);
  if (!run_id) return std::nullopt;
  // The step is optional: absent until a worker reports one (Encode leaves a
  // 0 out, and a "step":0 reads as 0 on both paths).
  uint64_t step = 0;
  if (Consume(in, ",\"step\":")) {
    auto reported = PlainUnsigned(in);
    if (!reported) return std::nullopt;
    step = *reported;
  }
  if (in != "}") return std::nullopt;
  return HeartbeatView{*run_id, *node_id, *generation, step};
}

}  // namespace muster::rdzv

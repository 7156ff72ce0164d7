#include "rendezvous/state/hello_gate.h"

#include <algorithm>

#include "rendezvous/state/takeover_hold.h"

namespace muster::rdzv {
namespace {

// Compares in time independent of where the strings differ, so the token
// cannot be guessed byte by byte from response times.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

HelloAnswer RefusedAnswer(ErrorCode code, std::string text) {
  return HelloAnswer{HelloAnswer::Verdict::kRefused, Error{code, std::move(text), true}};
}

}  // namespace

DaemonTiming TimingOf(const Settings& settings) {
  const auto ms = [](Duration d) { return static_cast<uint64_t>(d.count()); };
  return DaemonTiming{.keep_alive_interval_ms = ms(settings.keep_alive_interval),
                      .heartbeat_timeout_ms = ms(settings.heartbeat_timeout),
                      .fence_timeout_ms = ms(settings.fence_timeout),
                      .failover_timeout_ms = ms(settings.failover_timeout)};
}

HelloAnswer AnswerHello(const Message& first, std::string_view token, const std::string& daemon_id,
                        const Settings& settings, const ReplicaStatus& replica, Time now) {
  const Hello* hello = std::get_if<Hello>(&first);
  if (hello == nullptr)
    return RefusedAnswer(ErrorCode::kBadRequest, "the first message must be Hello");
  if (hello->protocol_version != kProtocolVersion) {
    return RefusedAnswer(ErrorCode::kBadVersion, "protocol version " +
                                                     std::to_string(hello->protocol_version) +
                                                     " is not supported (this daemon speaks " +
                                                     std::to_string(kProtocolVersion) + ")");
  }
  if (!ConstantTimeEquals(hello->token, token)) {
    return RefusedAnswer(ErrorCode::kBadToken, hello->token.empty()
                                                   ? "this daemon requires a token (--token-file)"
                                                   : "wrong token");
  }
  if (!replica.Serves(now)) {
    return HelloAnswer{HelloAnswer::Verdict::kRedirected, StandbyAnswer(replica, now)};
  }
  return HelloAnswer{
      HelloAnswer::Verdict::kWelcome,
      Welcome{kProtocolVersion, daemon_id, ServingEpoch(replica), TimingOf(settings)}};
}

Error StandbyAnswer(const ReplicaStatus& replica, Time now) {
  const bool known = replica.fresh && !replica.leader.empty() && replica.leader != replica.self;
  const std::string text =
      known ? "not the leader: the leader is " + replica.leader + " (epoch " +
                  std::to_string(replica.epoch) + ")"
            : std::string(replica.fresh ? "no leader is elected yet"
                                        : "no leader is known (etcd is out of reach)");
  Error answer{known ? ErrorCode::kNotLeader : ErrorCode::kNoLeader, text, false};
  if (known) {
    answer.leader = replica.leader;
    answer.epoch = replica.epoch;
  }
  // Read so recently that no leader elected since can have waited for it
  // longer than its takeover hold allows for.
  answer.current = replica.fresh && now - replica.view_read_at <= kStandbyViewCurrentFor;
  return answer;
}

}  // namespace muster::rdzv

#include "rendezvous/client/fence_rule.h"

#include <algorithm>

#include "common/clock.h"

namespace muster::rdzv {

FenceDecision DecideFence(Time last_contact, ContactFailure latest, Time now,
                          const Settings& settings) {
  FenceDecision d;
  d.silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_contact);
  const auto deadline = last_contact + settings.fence_timeout;
  if (now < deadline) {
    d.next_check = deadline;
  } else if (latest == ContactFailure::kRefused) {
    d.next_check = now + settings.keep_alive_interval;
  } else {
    d.kind = FenceDecision::Kind::kFence;
    d.why = "no word from the rendezvous for " + std::to_string(d.silent.count()) + " ms";
  }
  return d;
}

bool StandbyAnswerPredatesTakeover(const Error& answer, uint64_t served_epoch) {
  if (!answer.current) return false;  // read too long ago: a leader may have won since
  if (answer.code == ErrorCode::kNoLeader) return true;
  // A newer leader is one this agent must reach, not a reason to wait.
  return answer.code == ErrorCode::kNotLeader && answer.epoch <= served_epoch;
}

FenceDecision DecideReplicatedFence(Time last_contact, std::optional<Time> last_answer, Time now,
                                    const Settings& settings) {
  FenceDecision d;
  d.silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_contact);
  const auto plain_deadline = last_contact + settings.fence_timeout;
  const auto failover_deadline = last_contact + settings.failover_timeout;
  if (now < plain_deadline) {
    d.next_check = plain_deadline;
    return d;
  }
  if (now >= failover_deadline) {
    d.kind = FenceDecision::Kind::kFence;
    d.why = "no leader of the rendezvous took this agent back within failover_timeout (" +
            std::to_string(d.silent.count()) + " ms)";
    return d;
  }
  if (last_answer && now < *last_answer + settings.fence_timeout) {
    d.next_check = std::min(*last_answer + settings.fence_timeout, failover_deadline);
    return d;
  }
  const auto heard_any = last_answer ? std::max(*last_answer, last_contact) : last_contact;
  d.kind = FenceDecision::Kind::kFence;
  d.why = "no word from any replica of the rendezvous for " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::milliseconds>(now - heard_any).count()) +
          " ms";
  return d;
}

std::chrono::milliseconds AttemptBound(std::chrono::milliseconds usual,
                                       std::optional<Time> fence_check, Time now,
                                       size_t left_in_sweep) {
  if (!fence_check) return usual;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*fence_check - now);
  // Ceiling division: shares that add up to the time left, not less.
  // (Signed: `left` is negative once the fence check is due.)
  const auto ways = static_cast<std::chrono::milliseconds::rep>(std::max<size_t>(left_in_sweep, 1));
  const auto share = (left + std::chrono::milliseconds(ways - 1)) / ways;
  return std::clamp(share, kMinAttempt, std::max(usual, kMinAttempt));
}

}  // namespace muster::rdzv

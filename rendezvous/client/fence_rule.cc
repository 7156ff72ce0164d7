#include "rendezvous/client/fence_rule.h"

namespace muster::rdzv {

FenceDecision DecideFence(std::chrono::steady_clock::time_point last_contact, ContactFailure latest,
                          std::chrono::steady_clock::time_point now, const Settings& settings) {
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

}  // namespace muster::rdzv

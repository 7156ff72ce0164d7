// NextBackoff: how long to wait before reconnect attempt `attempt` (0-based):
// exponential from `base`, capped at `cap`, with "equal jitter" in [d/2, d] so
// agents that lost the daemon together do not reconnect in lockstep. Pure:
// `unit_random` in [0, 1) is supplied by the caller.
#pragma once

#include <algorithm>
#include <chrono>

namespace muster {

inline std::chrono::milliseconds NextBackoff(int attempt, std::chrono::milliseconds base,
                                             std::chrono::milliseconds cap, double unit_random) {
  const int shift = std::clamp(attempt, 0, 20);
  const auto full = std::min<std::chrono::milliseconds::rep>(base.count() << shift, cap.count());
  const double jittered = static_cast<double>(full) * (0.5 + 0.5 * unit_random);
  return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(jittered));
}

}  // namespace muster

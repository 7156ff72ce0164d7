// The one clock of every deadline, timeout and age in muster, and its time
// points. Decision code never reads it: its events carry `now` as a Time,
// and only shells (sockets, timers, threads) call Clock::now().
#pragma once

#include <chrono>

namespace muster {

using Clock = std::chrono::steady_clock;
using Time = Clock::time_point;

}  // namespace muster

// Helpers for the ClientMachine tests (rendezvous/client/client_machine.h):
// actions printed as short lines ("connect 10.0.0.2:29400 #2", "send #2
// Hello", "arm retry @+84ms", "fence"), times relative to a test's start.
#pragma once

#include <chrono>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "rendezvous/client/client_machine.h"

namespace muster::rdzv::testing {

using Lines = std::vector<std::string>;

inline std::string MessageName(const Message& message) {
  return std::visit(
      [](const auto& m) -> std::string {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Hello>) return "Hello";
        if constexpr (std::is_same_v<T, Join>) return "Join";
        if constexpr (std::is_same_v<T, Heartbeat>) {
          std::string compute;
          for (uint64_t us : m.compute_us) {
            compute += (compute.empty() ? "" : ",") + std::to_string(us);
          }
          return "Heartbeat gen=" + std::to_string(m.generation) +
                 (m.step != 0 ? " step=" + std::to_string(m.step) : "") +
                 (compute.empty() ? "" : " compute_us=" + compute);
        }
        if constexpr (std::is_same_v<T, WorkerFailed>)
          return "WorkerFailed gen=" + std::to_string(m.generation);
        if constexpr (std::is_same_v<T, WorkersSucceeded>)
          return "WorkersSucceeded gen=" + std::to_string(m.generation);
        if constexpr (std::is_same_v<T, Leave>) return "Leave";
        return "other";
      },
      message);
}

inline std::string TimerName(ClientTimer timer) {
  switch (timer) {
    case ClientTimer::kHeartbeat:
      return "heartbeat";
    case ClientTimer::kRetry:
      return "retry";
    case ClientTimer::kAttempt:
      return "attempt";
    case ClientTimer::kFence:
      return "fence";
    case ClientTimer::kQuiet:
      return "quiet";
    case ClientTimer::kFirstContact:
      return "first-contact";
  }
  return "?";
}

// One action as a line; times as "@+Nms" after `start`. Log lines are "".
inline std::string Show(const ClientAction& action, Time start) {
  return std::visit(
      [start](const auto& a) -> std::string {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, ConnectTo>) {
          return "connect " + a.endpoint.Text() + " #" + std::to_string(a.link);
        } else if constexpr (std::is_same_v<T, SendTo>) {
          return "send #" + std::to_string(a.link) + " " + testing::MessageName(a.message);
        } else if constexpr (std::is_same_v<T, CloseLink>) {
          return "close #" + std::to_string(a.link);
        } else if constexpr (std::is_same_v<T, ArmTimer>) {
          return "arm " + TimerName(a.timer) + " @+" +
                 std::to_string(
                     std::chrono::duration_cast<std::chrono::milliseconds>(a.at - start).count()) +
                 "ms";
        } else if constexpr (std::is_same_v<T, CancelTimer>) {
          return "cancel " + TimerName(a.timer);
        } else if constexpr (std::is_same_v<T, DeliverAssignment>) {
          return "deliver assignment gen=" + std::to_string(a.assignment.generation);
        } else if constexpr (std::is_same_v<T, DeliverWaiting>) {
          return "deliver waiting";
        } else if constexpr (std::is_same_v<T, DeliverRunEnded>) {
          return std::string("deliver run ended ") + (a.succeeded ? "succeeded" : "failed");
        } else if constexpr (std::is_same_v<T, FenceWorkers>) {
          return "fence";
        } else if constexpr (std::is_same_v<T, GiveUp>) {
          return "give up: " + a.message;
        } else {
          return "";
        }
      },
      action);
}

// Every action but the log lines, as lines.
inline Lines Show(const ClientActions& actions, Time start) {
  Lines lines;
  for (const ClientAction& action : actions) {
    std::string line = Show(action, start);
    if (!line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

// Only the lines that start with one of `prefixes`.
inline Lines Only(const Lines& lines, const std::vector<std::string>& prefixes) {
  Lines kept;
  for (const std::string& line : lines) {
    for (const std::string& prefix : prefixes) {
      if (line.rfind(prefix, 0) == 0) {
        kept.push_back(line);
        break;
      }
    }
  }
  return kept;
}

}  // namespace muster::rdzv::testing

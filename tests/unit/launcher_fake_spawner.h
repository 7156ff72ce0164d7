// FakeSpawner: a ProcessSpawner for the launcher's unit tests. It starts
// nothing: it records what was spawned and every signal sent, and hands out
// pids 1000, 1001, ... in spawn order. Processes "exist" until the test
// reports their exit to whoever spawned them. A test that runs a whole agent
// plays the processes through the hooks (each called after the record is
// kept) and the events receiver the agent set.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/process/process_spawner.h"

namespace muster::testing {

class FakeSpawner final : public ProcessSpawner {
 public:
  void SetEvents(SpawnEvents& receiver) override { events = &receiver; }
  Result<pid_t> Spawn(const SpawnRequest& request) override {
    if (fail_at_spawn == static_cast<int>(spawned.size())) {
      return Status::IoError("cannot start '" + request.executable + "'");
    }
    spawned.push_back(request);
    const auto pid = static_cast<pid_t>(1000 + spawned.size() - 1);
    if (on_spawn) on_spawn(request, pid);
    return pid;
  }
  void SignalGroup(pid_t pid, int sig) override {
    signals.emplace_back(pid, sig);
    if (on_signal_group) on_signal_group(pid, sig);
  }
  void SignalProcess(pid_t pid, int sig) override { process_signals.emplace_back(pid, sig); }
  Status SendControl(uint64_t tag, std::string_view line) override {
    if (fail_control) return Status::IoError("control pipe closed");
    control.emplace_back(tag, std::string(line));
    if (on_control) on_control(tag, line);
    return Status::Ok();
  }

  std::vector<SpawnRequest> spawned;
  std::vector<std::pair<pid_t, int>> signals;          // (group leader, signal)
  std::vector<std::pair<pid_t, int>> process_signals;  // (pid, signal): that process alone
  int fail_at_spawn = -1;                              // the spawn (0-based) that fails; -1: none
  std::vector<std::pair<uint64_t, std::string>> control;  // (tag, line) sent on control pipes
  bool fail_control = false;                              // every SendControl fails

  SpawnEvents* events = nullptr;  // the receiver SetEvents named
  std::function<void(const SpawnRequest&, pid_t)> on_spawn;
  std::function<void(pid_t, int)> on_signal_group;
  std::function<void(uint64_t, std::string_view)> on_control;
};

}  // namespace muster::testing

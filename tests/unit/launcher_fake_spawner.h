// FakeSpawner: a ProcessSpawner for the launcher's unit tests. It starts
// nothing: it records what was spawned and every signal sent, and hands out
// pids 1000, 1001, ... in spawn order. Processes "exist" until the test
// reports their exit to whoever spawned them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/process_spawner.h"

namespace muster::testing {

class FakeSpawner final : public ProcessSpawner {
 public:
  void SetEvents(SpawnEvents& /*events*/) override {}
  Result<pid_t> Spawn(const SpawnRequest& request) override {
    if (fail_at_spawn == static_cast<int>(spawned.size())) {
      return Status::IoError("cannot start '" + request.executable + "'");
    }
    spawned.push_back(request);
    return static_cast<pid_t>(1000 + spawned.size() - 1);
  }
  void SignalGroup(pid_t pid, int sig) override { signals.emplace_back(pid, sig); }
  void SignalProcess(pid_t pid, int sig) override { process_signals.emplace_back(pid, sig); }
  Status SendControl(uint64_t tag, std::string_view line) override {
    if (fail_control) return Status::IoError("control pipe closed");
    control.emplace_back(tag, std::string(line));
    return Status::Ok();
  }

  std::vector<SpawnRequest> spawned;
  std::vector<std::pair<pid_t, int>> signals;          // (group leader, signal)
  std::vector<std::pair<pid_t, int>> process_signals;  // (pid, signal): that process alone
  int fail_at_spawn = -1;                              // the spawn (0-based) that fails; -1: none
  std::vector<std::pair<uint64_t, std::string>> control;  // (tag, line) sent on control pipes
  bool fail_control = false;                              // every SendControl fails
};

}  // namespace muster::testing

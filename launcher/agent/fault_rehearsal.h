// FaultRehearsal: the agent's side of fault injection (--inject). It arms a
// timer for the plan's time triggers, takes the workers' step reports for
// step triggers, and carries out what FaultInjector (decide/fault_injector.h)
// decides, through the hooks the agent gives. Every fault is logged as
// "event=inject" before it is carried out, so the log shows it even when the
// fault kills this agent.
//
// Single-threaded: on the agent's io_context. Tests:
// tests/unit/launcher_fault_rehearsal_test.cc.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "launcher/decide/fault_injector.h"
#include "launcher/output/progress_report.h"
#include "rendezvous/protocol/messages.h"

namespace muster {

// Where `node`'s workers run, as a fault plan names them.
FaultPlacement PlacementOf(const rdzv::Assignment& node);

class FaultRehearsal {
 public:
  // What carrying a fault out takes from the agent.
  struct Hooks {
    // Where this node's workers run now; nullopt while none does.
    std::function<std::optional<FaultPlacement>()> placement;
    // Sends `sig` to the worker of global rank `rank`; false when it does
    // not run here.
    std::function<bool(int rank, int sig)> signal_worker;
    // The rendezvous client's traffic: none in static runs (nullptr).
    std::function<void(std::chrono::milliseconds)> suspend_traffic;
    std::function<void(std::chrono::milliseconds duration, std::chrono::milliseconds window)>
        delay_heartbeats;
  };

  // How the node's workers report steps, for the warnings at start.
  enum class WorkerSteps {
    kNotPython,     // --no-python: the program reports what it reports
    kPythonHooked,  // warm Python workers: the step hooks report them
    kPythonCold,    // cold Python workers: only a script that writes them
  };

  // Logs the plan (and which faults a Python job may never fire) and arms
  // its first time trigger. `hosts_daemon`: this agent serves the
  // rendezvous, which plans treat apart.
  FaultRehearsal(boost::asio::io_context& io, const FaultPlan& plan, bool hosts_daemon,
                 WorkerSteps steps, Hooks hooks);

  // A worker's progress line: the faults it says it carried out, and its step.
  void OnProgress(int rank, const ProgressReport& report);
  // This node's workers started: a `slow` fault waiting for them fires.
  void OnWorkersStarted();
  // At the end of the run: a warning for each planned fault that never
  // fired where this node's workers ran last (`last`).
  void ReportUnfired(const std::optional<FaultPlacement>& last) const;
  // MUSTER_INJECT, MUSTER_INJECT_SEED and MUSTER_INJECT_FIRED for a worker.
  void AddVariables(std::map<std::string, std::string>& variables) const;
  void Stop();

 private:
  // A `slow` rank: stopped (SIGSTOP) for 1 - 1/factor of every kSlowPeriod
  // and running (SIGCONT) the rest, until the run ends. Its process of the
  // moment is signalled, a restarted one too.
  struct SlowRank {
    int rank = 0;
    double factor = 2;
    bool stopped = false;
  };
  static constexpr std::chrono::milliseconds kSlowPeriod{100};
  void ArmTimer();
  void CarryOut(const std::vector<FaultAction>& actions);
  void DutyCycle();

  FaultInjector injector_;
  Hooks hooks_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer slow_timer_;
  std::optional<SlowRank> slow_;  // one slow rank per agent
  bool stopped_ = false;
};

}  // namespace muster

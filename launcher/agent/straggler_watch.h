// StragglerWatch: the agent's side of finding the slow rank in lock-step
// training. It takes each local rank's compute time per step (from the step
// hooks' progress lines), judges them once a second with ComputeStragglers
// (launcher/decide/compute_stragglers.h) and logs each flag raised or
// cleared:
//   event=straggler rank=R host=H compute_ms=X median_ms=Y
//   event=straggler_cleared rank=R host=H compute_ms=X median_ms=Y
// It needs no daemon: a standalone run's log says it. The timer runs only
// while compute times arrive.
//
// Single-threaded: on the agent's io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <string>

#include "launcher/decide/compute_stragglers.h"

namespace muster {

class StragglerWatch {
 public:
  StragglerWatch(boost::asio::io_context& io, std::string host, ComputeStragglerRule rule = {});

  // Global rank `rank` reported a step that took it `compute_us` itself.
  void OnCompute(int rank, int64_t compute_us);
  // The ranks change (a restart, a new generation): forget them all.
  void Reset();
  void Stop();

 private:
  void Arm();
  void Judge();

  std::string host_;
  ComputeStragglers stragglers_;
  boost::asio::steady_timer timer_;
  bool armed_ = false;
  bool stopped_ = false;
};

}  // namespace muster

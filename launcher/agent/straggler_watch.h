// StragglerWatch: the agent's side of finding the slow rank in lock-step
// training. It takes each local rank's compute time per step (from the step
// hooks' progress lines), judges them once a second with ComputeStragglers
// (rendezvous/state/compute_stragglers.h) and logs each flag raised or
// cleared:
//   event=straggler rank=R host=H compute_ms=X median_ms=Y
//   event=straggler_cleared rank=R host=H compute_ms=X median_ms=Y
// It needs no daemon: a standalone run's log says it. The timer runs only
// while compute times arrive. Under a daemon, each judgement also hands the
// ranks' averages to `publish` (by local rank, µs, 0 where unknown), which
// sends them with the next heartbeat: the daemon judges across nodes.
//
// Single-threaded: on the agent's io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rendezvous/state/compute_stragglers.h"

namespace muster {

class StragglerWatch {
 public:
  StragglerWatch(boost::asio::io_context& io, std::string host,
                 rdzv::ComputeStragglerRule rule = {});

  using Publish = std::function<void(std::vector<uint64_t> compute_us)>;

  // Global rank `rank` reported a step that took it `compute_us` itself.
  void OnCompute(int rank, int64_t compute_us);
  // The ranks change (a restart, a new generation): forget them all. The
  // node's ranks are now first_rank .. first_rank + ranks - 1.
  void Reset(int first_rank = 0, int ranks = 0);
  // Where each judgement's averages go (none: kept to this node).
  void SetPublish(Publish publish) { publish_ = std::move(publish); }
  void Stop();

 private:
  void Arm();
  void Judge();

  std::string host_;
  Publish publish_;
  int first_rank_ = 0;
  int ranks_ = 0;
  rdzv::ComputeStragglers stragglers_;
  boost::asio::steady_timer timer_;
  bool armed_ = false;
  bool stopped_ = false;
};

}  // namespace muster

#include "launcher/agent/straggler_watch.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "common/clock.h"

namespace muster {

namespace {

constexpr std::chrono::seconds kJudgePeriod{1};

std::string Millis(const std::optional<double>& ms) {
  return ms ? fmt::format("{:.1f}", *ms) : std::string("unknown");
}

}  // namespace

StragglerWatch::StragglerWatch(boost::asio::io_context& io, std::string host,
                               ComputeStragglerRule rule)
    : host_(std::move(host)), stragglers_(rule), timer_(io) {}

void StragglerWatch::OnCompute(int rank, int64_t compute_us) {
  if (stopped_) return;
  stragglers_.OnCompute(rank, static_cast<double>(compute_us) / 1000.0, Clock::now());
  if (!armed_) Arm();
}

void StragglerWatch::Reset() {
  stragglers_.Clear();
  timer_.cancel();
  armed_ = false;
}

void StragglerWatch::Stop() {
  stopped_ = true;
  Reset();
}

void StragglerWatch::Arm() {
  armed_ = true;
  timer_.expires_after(kJudgePeriod);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    armed_ = false;
    Judge();
  });
}

void StragglerWatch::Judge() {
  for (const ComputeStragglerChange& change : stragglers_.Evaluate(Clock::now())) {
    if (change.flagged) {
      spdlog::warn("event=straggler rank={} host={} compute_ms={} median_ms={}", change.rank, host_,
                   Millis(change.compute_ms), Millis(change.median_ms));
    } else {
      spdlog::info("event=straggler_cleared rank={} host={} compute_ms={} median_ms={}",
                   change.rank, host_, Millis(change.compute_ms), Millis(change.median_ms));
    }
  }
  // Judged again while reports come (a flagged rank whose reports stop is
  // cleared at the next judgement: stale).
  if (!stragglers_.flagged().empty()) Arm();
}

}  // namespace muster

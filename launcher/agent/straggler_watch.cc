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
                               rdzv::ComputeStragglerRule rule)
    : host_(std::move(host)), stragglers_(rule), timer_(io) {}

void StragglerWatch::OnCompute(int rank, int64_t compute_us) {
  if (stopped_) return;
  stragglers_.OnCompute(rank, static_cast<double>(compute_us) / 1000.0, Clock::now());
  if (!armed_) Arm();
}

void StragglerWatch::Reset(int first_rank, int ranks) {
  first_rank_ = first_rank;
  ranks_ = ranks;
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
  const Time now = Clock::now();
  if (publish_) {
    std::vector<uint64_t> compute_us(static_cast<size_t>(ranks_), 0);
    bool any = false;
    for (int i = 0; i < ranks_; ++i) {
      if (const auto ms = stragglers_.average_ms(first_rank_ + i, now)) {
        compute_us[static_cast<size_t>(i)] = static_cast<uint64_t>(*ms * 1000.0);
        any = true;
      }
    }
    if (any) publish_(std::move(compute_us));
  }
  for (const rdzv::ComputeStragglerChange& change : stragglers_.Evaluate(now)) {
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

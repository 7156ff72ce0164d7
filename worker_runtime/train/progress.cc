#include "worker_runtime/train/progress.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace muster::train {

Progress::Progress(bool enabled, int total_steps, int log_every)
    : enabled_(enabled),
      tty_(isatty(STDOUT_FILENO) == 1),
      total_(total_steps),
      log_every_(log_every > 0 ? log_every : 1) {}

bool Progress::Reports(uint64_t step) const {
  return step % static_cast<uint64_t>(log_every_) == 0 || step == static_cast<uint64_t>(total_);
}

void Progress::Report(uint64_t step, double loss, double accuracy) {
  if (!enabled_) return;
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled =
        total_ > 0 ? static_cast<int>(kWidth * static_cast<double>(step) / total_) : 0;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::printf("\rstep %llu/%d [%s] loss %.4f acc %.3f", static_cast<unsigned long long>(step),
                total_, bar.c_str(), loss, accuracy);
    std::fflush(stdout);
    bar_open_ = true;
    return;
  }
  std::printf("step=%llu loss=%.6f accuracy=%.4f\n", static_cast<unsigned long long>(step), loss,
              accuracy);
  std::fflush(stdout);
}

void Progress::Done() {
  if (bar_open_) std::printf("\n");
  bar_open_ = false;
}

}  // namespace muster::train

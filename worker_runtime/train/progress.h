// Progress: rank 0's view of training. On a terminal, one progress bar line
// rewritten in place; otherwise (a pipe, a log file, under muster) a plain
// line every `log_every` steps and at the last step. Other ranks print nothing.
#pragma once

#include <cstdint>

namespace muster::train {

class Progress {
 public:
  Progress(bool enabled, int total_steps, int log_every);
  void Step(uint64_t step, double loss, double accuracy);
  void Done();

 private:
  bool enabled_;
  bool tty_;
  int total_;
  int log_every_;
  bool bar_open_ = false;
};

}  // namespace muster::train

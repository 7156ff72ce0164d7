// Progress: rank 0's view of training. Steps are reported every `log_every`
// steps and at the last one; on a terminal as one progress bar line
// rewritten in place, otherwise (a pipe, a log file, under muster) as a plain
// "step=… loss=… accuracy=…" line. Other ranks print nothing.
//
// Reports() answers alike on every rank (it depends on the step and the
// flags only), so the trainer can run the collective that averages the loss
// on exactly the reported steps.
#pragma once

#include <cstdint>

namespace muster::train {

class Progress {
 public:
  Progress(bool enabled, int total_steps, int log_every);
  // Whether step `step` (1-based) is reported.
  bool Reports(uint64_t step) const;
  // Shows a reported step's averaged loss and accuracy (when enabled).
  void Report(uint64_t step, double loss, double accuracy);
  // Ends the progress bar's line, if one is open.
  void Done();

 private:
  bool enabled_;
  bool tty_;
  int total_;
  int log_every_;
  bool bar_open_ = false;
};

}  // namespace muster::train

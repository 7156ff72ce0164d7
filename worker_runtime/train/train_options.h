// TrainOptions: the flags of muster-train (see main.cc for their help text),
// their validation, and the replica they describe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "worker_runtime/train/replica.h"

namespace muster::train {

struct TrainOptions {
  int steps = 200;
  int global_batch = 256;  // samples per step, split over any world size (sample_order.h)
  int hidden = 256;        // width of each hidden layer
  int depth = 2;           // number of hidden layers
  double lr = 0.05;
  double momentum = 0.9;
  uint64_t seed = 1;
  std::string backend = "auto";
  std::string checkpoint_dir;   // empty: no checkpoints
  int checkpoint_every = 0;     // steps; 0: never
  std::string out_path;         // empty: no parameter dump
  size_t dataset_size = 65536;  // any size: epochs are laid end to end (sample_order.h)
  int features = 64;
  int classes = 10;
  double bucket_mb = 1.0;
  bool overlap = true;
  int log_every = 10;
  double collective_timeout_s = 120;
  int step_sleep_ms = 0;  // slows each step down, to rehearse failures mid-run
};

// Checks the values alone: nothing here depends on the world size, so flags
// accepted at one world size are accepted at every other (an elastic job
// keeps its flags when it shrinks or grows). A global batch smaller than the
// world size is accepted too: the ranks past it read no sample.
// Errors: InvalidArgument quoting the flag and its value,
// "--global-batch=0 must be positive".
Status CheckOptions(const TrainOptions& options);

// The model and optimizer the flags describe.
ReplicaOptions ReplicaOptionsFor(const TrainOptions& options);

}  // namespace muster::train

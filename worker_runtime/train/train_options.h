// TrainOptions: the flags of muster-train (see main.cc for their help text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace muster::train {

struct TrainOptions {
  int steps = 200;
  int global_batch = 256;  // split across ranks: must be a multiple of the world size
  int hidden = 256;        // width of each hidden layer
  int depth = 2;           // number of hidden layers
  double lr = 0.05;
  double momentum = 0.9;
  uint64_t seed = 1;
  std::string backend = "auto";
  std::string checkpoint_dir;  // empty: no checkpoints
  int checkpoint_every = 0;    // steps; 0: never
  std::string out_path;        // empty: no parameter dump
  size_t dataset_size = 65536;
  int features = 64;
  int classes = 10;
  double bucket_mb = 1.0;
  bool overlap = true;
  int log_every = 10;
  double collective_timeout_s = 120;
  int step_sleep_ms = 0;  // slows each step down, to rehearse failures mid-run
};

}  // namespace muster::train

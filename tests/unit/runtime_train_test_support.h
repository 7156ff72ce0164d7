// Test helpers for muster-train's pieces: the one-rank communicator they run
// over, and the small model every trainer unit test trains.
#pragma once

#include <catch2/catch.hpp>
#include <memory>

#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/train/train_options.h"

namespace muster::testing {

// A Gloo communicator of one process (no store, no peers).
inline std::unique_ptr<runtime::Communicator> OneRank() {
  auto comm = runtime::CreateCommunicator(runtime::Context{}, nullptr,
                                          {.backend = runtime::Backend::kGloo});
  REQUIRE(comm.ok());
  return std::move(comm).value();
}

// 4 features, one hidden layer of 8, 3 classes; the rest as the defaults.
inline train::TrainOptions SmallModel() {
  train::TrainOptions o;
  o.features = 4;
  o.hidden = 8;
  o.depth = 1;
  o.classes = 3;
  return o;
}

}  // namespace muster::testing

// muster-train's flags (worker_runtime/train/train_options.h) and the
// replica's side of an uneven split (replica.h): values are checked alone,
// never against the world size; a rank's step adds its samples' gradient sum,
// and a rank without samples adds zero.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/runtime_train_test_support.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/train/cpu_replica.h"
#include "worker_runtime/train/synthetic_dataset.h"
#include "worker_runtime/train/train_options.h"

namespace {

using muster::testing::OneRank;
using muster::testing::SmallModel;
using muster::train::CheckOptions;
using muster::train::CpuReplica;
using muster::train::ReplicaOptionsFor;
using muster::train::TrainOptions;

TrainOptions Small() {
  TrainOptions o = SmallModel();
  o.momentum = 0;
  return o;
}

// Samples [first, first + n) of a small dataset: features and labels.
void Samples(size_t first, size_t n, std::vector<float>& x, std::vector<int>& labels) {
  const muster::train::SyntheticDataset data(3, 100, 4, 3);
  x.assign(n * 4, 0.0f);
  labels.assign(n, 0);
  for (size_t j = 0; j < n; ++j) {
    labels[j] = data.Sample(first + j, std::span<float>(x).subspan(j * 4, 4));
  }
}

}  // namespace

TEST_CASE("flags that once needed multiples of the world size are accepted as they are",
          "[train]") {
  TrainOptions o;
  CHECK(CheckOptions(o).ok());  // the defaults, at any world size
  o.global_batch = 63;
  o.dataset_size = 1001;
  CHECK(CheckOptions(o).ok());
  o.global_batch = 1;  // smaller than most worlds: the ranks past it read nothing
  o.dataset_size = 1;
  CHECK(CheckOptions(o).ok());
}

TEST_CASE("values out of range are refused, quoting the flag and the value", "[train]") {
  struct Case {
    void (*set)(TrainOptions&);
    std::string message;
  };
  const Case cases[] = {
      {[](TrainOptions& o) { o.global_batch = 0; }, "--global-batch=0 must be positive"},
      {[](TrainOptions& o) { o.global_batch = -4; }, "--global-batch=-4 must be positive"},
      {[](TrainOptions& o) { o.dataset_size = 0; }, "--dataset-size=0 must be positive"},
      {[](TrainOptions& o) { o.steps = 0; }, "--steps=0 must be positive"},
      {[](TrainOptions& o) { o.lr = -0.5; }, "--lr=-0.5 must be positive"},
      {[](TrainOptions& o) { o.depth = -1; }, "--depth=-1 must be 0 or more"},
      {[](TrainOptions& o) { o.classes = 1; }, "--classes=1 must be at least 2"},
      {[](TrainOptions& o) { o.momentum = 1; }, "--momentum=1 must be in [0, 1)"},
  };
  for (const Case& c : cases) {
    TrainOptions o;
    c.set(o);
    const muster::Status s = CheckOptions(o);
    CHECK(s.IsInvalidArgument());
    CHECK(s.message() == c.message);
  }
}

TEST_CASE("uneven shares stepped at the global batch's scale add up to the whole batch's step",
          "[train]") {
  // With momentum 0 a step moves the weights by lr times the gradient: the
  // moves of a 3-sample and a 2-sample share, each scaled by 1/5, must add up
  // to the move of the 5 samples together (an average per share would not).
  auto comm = OneRank();
  const TrainOptions o = Small();
  CpuReplica whole(*comm, ReplicaOptionsFor(o)), first(*comm, ReplicaOptionsFor(o)),
      second(*comm, ReplicaOptionsFor(o));
  const size_t n = whole.parameter_count();
  std::vector<float> start(n), zero(n, 0.0f);
  whole.layout().Initialize(1, start);
  for (CpuReplica* r : {&whole, &first, &second}) r->SetState(start, zero);

  std::vector<float> x;
  std::vector<int> labels;
  Samples(0, 5, x, labels);
  const auto all = whole.Step(x, labels, 1.0f / 5);
  Samples(0, 3, x, labels);
  const auto a = first.Step(x, labels, 1.0f / 5);
  Samples(3, 2, x, labels);
  const auto b = second.Step(x, labels, 1.0f / 5);
  CHECK(a.loss_sum + b.loss_sum == Approx(all.loss_sum).epsilon(1e-12));

  std::vector<float> p_all(n), p_a(n), p_b(n), m(n);
  whole.GetState(p_all, m);
  first.GetState(p_a, m);
  second.GetState(p_b, m);
  double largest = 0;
  for (size_t k = 0; k < n; ++k) largest = std::max(largest, std::abs(double(start[k] - p_all[k])));
  REQUIRE(largest > 1e-4);  // the step moved something
  for (size_t k = 0; k < n; ++k) {
    const double moved_all = start[k] - p_all[k];
    const double moved_parts = (start[k] - p_a[k]) + (start[k] - p_b[k]);
    INFO("parameter " << k);
    CHECK(std::abs(moved_parts - moved_all) <= 1e-6 * largest + 1e-6 * std::abs(start[k]));
  }
}

TEST_CASE("a rank without samples adds a zero gradient: only momentum moves its weights",
          "[train]") {
  auto comm = OneRank();
  TrainOptions o = Small();
  o.momentum = 0.9;
  CpuReplica replica(*comm, ReplicaOptionsFor(o));
  const size_t n = replica.parameter_count();
  std::vector<float> params(n), momentum(n);
  replica.layout().Initialize(2, params);
  for (size_t k = 0; k < n; ++k) momentum[k] = 0.001f * static_cast<float>(k % 7) - 0.003f;
  replica.SetState(params, momentum);

  const auto stats = replica.Step({}, {}, 1.0f / 4);
  CHECK(stats.loss_sum == 0);
  CHECK(stats.correct == 0);
  std::vector<float> p(n), m(n);
  replica.GetState(p, m);
  for (size_t k = 0; k < n; ++k) {
    const float v = 0.9f * momentum[k] + 0.0f;  // as ApplySgd rounds it
    INFO("parameter " << k);
    CHECK(m[k] == v);
    CHECK(p[k] == params[k] - 0.05f * v);
  }
}

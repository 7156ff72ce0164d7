// The live-state agreement's choice (live_state.h): the survivor with the
// most steps done, the lowest rank among equals, none when nobody offers;
// and over the one-rank communicator, a survivor keeps its own state.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "tests/unit/runtime_train_test_support.h"
#include "worker_runtime/train/cpu_replica.h"
#include "worker_runtime/train/live_state.h"

namespace muster::train {
namespace {

using muster::testing::OneRank;
using muster::testing::SmallModel;

// A replica over the one-rank communicator and its host state.
struct OneRankReplica {
  std::unique_ptr<runtime::Communicator> comm = OneRank();
  TrainOptions o = SmallModel();
  CpuReplica replica{*comm, ReplicaOptionsFor(o)};
  TrainState state;
  OneRankReplica() {
    state.params.resize(replica.parameter_count());
    state.momentum.assign(replica.parameter_count(), 0.0f);
  }
};

TEST_CASE("the state comes from the survivor with the most steps done") {
  CHECK(LiveStateOffer(false, 40) == 0);
  CHECK(LiveStateOffer(true, 0) == 1);  // a survivor at step 0 still offers
  CHECK(LiveStateOffer(true, 40) == 41);

  CHECK(PickStateSource(std::vector<double>{0, 0, 0}) == std::nullopt);
  CHECK(PickStateSource(std::vector<double>{}) == std::nullopt);
  CHECK(PickStateSource(std::vector<double>{0, 21, 0, 20}) == 1);   // a joiner at rank 0
  CHECK(PickStateSource(std::vector<double>{20, 21, 21, 0}) == 1);  // equals: the lowest rank
  CHECK(PickStateSource(std::vector<double>{0, 0, 1}) == 2);
}

TEST_CASE("alone, a survivor goes on from its own state and step") {
  OneRankReplica job;
  TrainState& state = job.state;
  std::fill(state.params.begin(), state.params.end(), 0.25f);
  std::fill(state.momentum.begin(), state.momentum.end(), 0.5f);
  state.step = 17;
  auto point = AgreeOnStart(job.o, 0, 1, job.replica, state, /*holds_live_state=*/true);
  REQUIRE(point.ok());
  CHECK(point->live_source == 0);
  CHECK(point->resumed);
  CHECK(state.step == 17);
  std::vector<float> params(state.params.size()), momentum(state.params.size());
  job.replica.GetState(params, momentum);
  CHECK(params == state.params);
  CHECK(momentum == state.momentum);
}

TEST_CASE("with no live state anywhere the checkpoint agreement decides") {
  OneRankReplica job;
  job.state.step = 9;  // ignored: not live
  auto point = AgreeOnStart(job.o, 0, 1, job.replica, job.state, /*holds_live_state=*/false);
  REQUIRE(point.ok());
  CHECK(point->live_source == -1);
  CHECK_FALSE(point->resumed);
  CHECK(job.state.step == 0);
}

}  // namespace
}  // namespace muster::train

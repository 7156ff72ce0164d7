// muster-train's resume agreement (worker_runtime/train/resume.h) over the
// one-rank communicator and a CPU replica: where a run starts, what a
// checkpoint must agree with (not the world size that wrote it), and what is
// refused with which message.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/unit/runtime_train_test_support.h"
#include "tests/unit/temp_files.h"
#include "worker_runtime/checkpoint/checkpoint.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/train/cpu_replica.h"
#include "worker_runtime/train/resume.h"

namespace {

using muster::runtime::Checkpoint;
using muster::runtime::Communicator;
using muster::testing::OneRank;
using muster::testing::SmallModel;
using muster::testing::TempDir;
using muster::train::AgreeOnResumePoint;
using muster::train::CpuReplica;
using muster::train::ReplicaOptionsFor;
using muster::train::ResumePoint;
using muster::train::SaveCheckpoint;
using muster::train::TrainOptions;
using muster::train::TrainState;

TrainOptions Small(const std::string& dir) {
  TrainOptions o = SmallModel();
  o.global_batch = 6;
  o.dataset_size = 10;
  o.seed = 7;
  o.checkpoint_dir = dir;
  return o;
}

// A replica over the one-rank communicator, and the host state sized for it.
struct OneRankJob {
  explicit OneRankJob(const TrainOptions& o)
      : comm(OneRank()), replica(*comm, ReplicaOptionsFor(o)) {
    state.params.resize(replica.parameter_count());
    state.momentum.assign(replica.parameter_count(), 0.0f);
  }
  std::vector<float> Params() {
    std::vector<float> p(replica.parameter_count()), m(replica.parameter_count());
    replica.GetState(p, m);
    return p;
  }
  std::vector<float> Momentum() {
    std::vector<float> p(replica.parameter_count()), m(replica.parameter_count());
    replica.GetState(p, m);
    return m;
  }

  std::unique_ptr<Communicator> comm;
  CpuReplica replica;
  TrainState state;
};

// Distinct, recognisable values.
std::vector<float> Ramp(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = start + 0.01f * static_cast<float>(k);
  return v;
}

// Writes a checkpoint of `o`'s model at `step` as SaveCheckpoint would, then
// lets `edit` change it (the data position, the metadata, a tensor).
template <typename Edit>
void WriteEdited(const TrainOptions& o, uint64_t step, Edit edit) {
  OneRankJob writer(o);
  writer.state.params = Ramp(writer.state.params.size(), 1.0f);
  writer.state.step = step;
  REQUIRE(SaveCheckpoint(o, 6, writer.state, 0.5).ok());
  auto loaded = muster::runtime::LoadNewestCheckpoint(o.checkpoint_dir);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->has_value());
  Checkpoint ckpt = **loaded;
  edit(ckpt);
  REQUIRE(muster::runtime::WriteCheckpoint(o.checkpoint_dir, ckpt).ok());
}

}  // namespace

TEST_CASE("without a checkpoint the run starts at step 0 from the seed's weights", "[train]") {
  TempDir dir("train_resume");
  for (const std::string& where : {std::string(), dir.path + "/none-yet"}) {
    const TrainOptions o = Small(where);
    OneRankJob job(o);
    auto point = AgreeOnResumePoint(o, 0, job.replica, job.state);
    REQUIRE(point.ok());
    CHECK_FALSE(point->resumed);
    CHECK(point->step == 0);
    CHECK(job.state.step == 0);
    CHECK(std::isnan(point->last_loss));
    CHECK(point->written_world_size == 0);
    std::vector<float> seeded(job.replica.parameter_count());
    job.replica.layout().Initialize(o.seed, seeded);
    CHECK(job.Params() == seeded);
    CHECK(job.Momentum() == std::vector<float>(seeded.size(), 0.0f));
  }
}

TEST_CASE("a checkpoint written at world size 6 resumes on one rank with its step, state and loss",
          "[train]") {
  TempDir dir("train_resume");
  const TrainOptions o = Small(dir.path);
  OneRankJob writer(o);
  writer.state.params = Ramp(writer.state.params.size(), 1.0f);
  writer.state.momentum = Ramp(writer.state.momentum.size(), -2.0f);
  writer.state.step = 7;
  REQUIRE(SaveCheckpoint(o, 6, writer.state, 0.25).ok());

  // Flags that change neither the model nor the data may differ.
  TrainOptions later = o;
  later.steps = 500;
  later.lr = 0.01;
  OneRankJob job(later);
  auto point = AgreeOnResumePoint(later, 0, job.replica, job.state);
  REQUIRE(point.ok());
  CHECK(point->resumed);
  CHECK(point->step == 7);
  CHECK(job.state.step == 7);
  CHECK(point->last_loss == 0.25);
  CHECK(point->written_world_size == 6);
  CHECK(job.Params() == writer.state.params);
  CHECK(job.Momentum() == writer.state.momentum);
  CHECK(job.state.params == writer.state.params);  // rank 0's host copy too

  // The data position kept is the step's: 7 steps of 6 samples over epochs of 10.
  auto saved = muster::runtime::LoadNewestCheckpoint(o.checkpoint_dir);
  REQUIRE(saved.ok());
  CHECK((*saved)->epoch == 4);
  CHECK((*saved)->sampler_position == 2);
}

TEST_CASE("a checkpoint of another model or data is refused, naming the directory", "[train]") {
  TempDir dir("train_resume");
  const TrainOptions o = Small(dir.path);
  OneRankJob writer(o);
  writer.state.step = 3;
  REQUIRE(SaveCheckpoint(o, 2, writer.state, 1.0).ok());
  TrainOptions other_batch = o;
  other_batch.global_batch = 5;
  TrainOptions other_data = o;
  other_data.dataset_size = 11;
  TrainOptions other_seed = o;
  other_seed.seed = 8;
  for (const TrainOptions& other : {other_batch, other_data, other_seed}) {
    OneRankJob job(other);
    auto point = AgreeOnResumePoint(other, 0, job.replica, job.state);
    REQUIRE_FALSE(point.ok());
    CHECK(point.status().IsInvalidArgument());
    CHECK_THAT(point.status().message(),
               Catch::Contains("checkpoint in '" + dir.path + "' is of another model or data") &&
                   Catch::Contains("use another --checkpoint-dir"));
  }
}

TEST_CASE("an epoch's end resumes written either way, and another data position is refused",
          "[train]") {
  // Step 5 of 6 samples over epochs of 10 ends exactly at epoch 3's start.
  struct Case {
    uint64_t epoch;
    uint64_t position;
    bool resumes;
  };
  for (const Case c : {Case{3, 0, true}, Case{2, 10, true}, Case{1, 20, false}, Case{3, 1, false},
                       Case{2, 0, false}, Case{0, 30, false}}) {
    INFO("epoch " << c.epoch << " position " << c.position);
    TempDir dir("train_resume");
    const TrainOptions o = Small(dir.path);
    WriteEdited(o, 5, [&](Checkpoint& ckpt) {
      ckpt.epoch = c.epoch;
      ckpt.sampler_position = c.position;
    });
    OneRankJob job(o);
    auto point = AgreeOnResumePoint(o, 0, job.replica, job.state);
    CHECK(point.ok() == c.resumes);
    if (point.ok()) {
      CHECK(point->step == 5);
      continue;
    }
    CHECK(point.status().IsInvalidArgument());
    CHECK_THAT(
        point.status().message(),
        Catch::Contains("checkpoint of step 5 in '" + dir.path + "' records data position epoch " +
                        std::to_string(c.epoch) + ", sample " + std::to_string(c.position) +
                        ", which is not where that step begins (epoch 3, sample 0 with 6 "
                        "samples per step and 10 per epoch)"));
  }
}

TEST_CASE("a checkpoint that predates the recorded world size resumes, its writer unknown",
          "[train]") {
  TempDir dir("train_resume");
  const TrainOptions o = Small(dir.path);
  WriteEdited(o, 4, [](Checkpoint& ckpt) {
    nlohmann::json meta = nlohmann::json::parse(ckpt.metadata);
    meta.erase("world_size");
    ckpt.metadata = meta.dump();
  });
  OneRankJob job(o);
  auto point = AgreeOnResumePoint(o, 0, job.replica, job.state);
  REQUIRE(point.ok());
  CHECK(point->step == 4);
  CHECK(point->written_world_size == 0);
  CHECK(point->last_loss == 0.5);
}

TEST_CASE("a checkpoint tensor of the wrong size is refused with both sizes", "[train]") {
  TempDir dir("train_resume");
  const TrainOptions o = Small(dir.path);
  size_t expected = 0;
  WriteEdited(o, 2, [&](Checkpoint& ckpt) {
    for (auto& [name, values] : ckpt.tensors) {
      if (name != "momentum") continue;
      expected = values.size();
      values.pop_back();
    }
  });
  OneRankJob job(o);
  auto point = AgreeOnResumePoint(o, 0, job.replica, job.state);
  REQUIRE_FALSE(point.ok());
  CHECK(point.status().IsInvalidArgument());
  CHECK(point.status().message() == "checkpoint tensor 'momentum' has " +
                                        std::to_string(expected - 1) + " values, expected " +
                                        std::to_string(expected));
}

// muster-train's sample order and split (worker_runtime/train/sample_order.h):
// the samples of a step do not depend on the world size, shares tile the
// global batch, epochs are laid end to end, and the position a checkpoint
// keeps depends on the step alone.
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "worker_runtime/data/distributed_sampler.h"
#include "worker_runtime/data/permutation.h"
#include "worker_runtime/train/sample_order.h"

namespace {

using muster::runtime::SamplerState;
using muster::runtime::SeededPermutation;
using muster::train::DescribeSplit;
using muster::train::PositionAfterStep;
using muster::train::SampleOrder;
using muster::train::Share;
using muster::train::ShareOf;

// Step `step`'s indices read by every rank of a world of `world`, in rank order.
std::vector<size_t> StepAcrossRanks(uint64_t seed, size_t n, size_t batch, int world,
                                    uint64_t step) {
  std::vector<size_t> all;
  for (int r = 0; r < world; ++r) {
    SampleOrder order(seed, n);  // each rank holds its own
    std::vector<size_t> mine;
    order.StepIndices(step, batch, ShareOf(batch, world, r), mine);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  return all;
}

}  // namespace

TEST_CASE("shares tile the global batch in rank order and differ by at most one sample",
          "[train]") {
  for (size_t batch = 0; batch <= 40; ++batch) {
    for (int world = 1; world <= 9; ++world) {
      size_t next = 0;
      size_t smallest = batch;
      size_t largest = 0;
      for (int r = 0; r < world; ++r) {
        const Share s = ShareOf(batch, world, r);
        INFO("batch " << batch << " world " << world << " rank " << r);
        CHECK(s.offset == next);
        next += s.count;
        smallest = std::min(smallest, s.count);
        largest = std::max(largest, s.count);
        // The larger shares come first.
        if (r > 0) CHECK(ShareOf(batch, world, r - 1).count >= s.count);
      }
      CHECK(next == batch);
      CHECK(largest - smallest <= 1);
    }
  }
  CHECK(ShareOf(256, 3, 0) == Share{.offset = 0, .count = 86});
  CHECK(ShareOf(256, 3, 2) == Share{.offset = 171, .count = 85});
  // A global batch smaller than the world leaves the last ranks without samples.
  CHECK(ShareOf(2, 4, 3) == Share{.offset = 2, .count = 0});
}

TEST_CASE("every world size reads the same samples in the same order at every step", "[train]") {
  const size_t n = 10;
  for (size_t batch : {1, 3, 7, 10, 23}) {
    for (uint64_t step = 0; step < 6; ++step) {
      const std::vector<size_t> one = StepAcrossRanks(5, n, batch, 1, step);
      CHECK(one.size() == batch);
      for (int world = 2; world <= 8; ++world) {
        INFO("batch " << batch << " step " << step << " world " << world);
        CHECK(StepAcrossRanks(5, n, batch, world, step) == one);
      }
    }
  }
}

TEST_CASE(
    "epochs are laid end to end: a step across an epoch's end finishes it, then begins the next",
    "[train]") {
  const uint64_t seed = 9;
  const std::vector<size_t> first = SeededPermutation(10, seed);
  const std::vector<size_t> second = SeededPermutation(10, seed + 1);
  SampleOrder order(seed, 10);
  std::vector<size_t> step2;
  order.StepIndices(2, 4, ShareOf(4, 1, 0), step2);  // positions 8..11
  CHECK(step2 == std::vector<size_t>{first[8], first[9], second[0], second[1]});
  // Split over 3 ranks (2, 1 and 1 samples): rank 0 ends epoch 0, rank 1
  // begins epoch 1.
  std::vector<size_t> rank1;
  order.StepIndices(2, 4, ShareOf(4, 3, 1), rank1);  // position 10 only
  CHECK(rank1 == std::vector<size_t>{second[0]});
  // Every sample once per epoch, nothing dropped or padded.
  for (uint64_t p = 0; p < 30; ++p) {
    CHECK(order.At(p) == SeededPermutation(10, seed + p / 10)[p % 10]);
  }
}

TEST_CASE("a global batch larger than the dataset spans several epochs", "[train]") {
  SampleOrder order(4, 3);
  std::vector<size_t> step0;
  order.StepIndices(0, 8, ShareOf(8, 1, 0), step0);
  std::vector<size_t> expected = SeededPermutation(3, 4);
  for (size_t i : SeededPermutation(3, 5)) expected.push_back(i);
  expected.push_back(SeededPermutation(3, 6)[0]);
  expected.push_back(SeededPermutation(3, 6)[1]);
  CHECK(step0 == expected);
}

TEST_CASE("each epoch's order is DistributedSampler's global order for the same seed", "[train]") {
  // So checkpoints of the sampler-based muster-train whose dataset was a
  // multiple of the global batch go on with the samples they would have read.
  auto sampler = muster::runtime::DistributedSampler::Create(
      {.dataset_size = 50, .num_replicas = 1, .rank = 0, .shuffle = true, .seed = 3});
  REQUIRE(sampler.ok());
  SampleOrder order(3, 50);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    sampler->SetEpoch(epoch);
    const std::vector<size_t> global = sampler->GlobalOrder();
    for (size_t i = 0; i < 50; ++i) CHECK(order.At(epoch * 50 + i) == global[i]);
  }
}

TEST_CASE("the data position after a step depends on the step, the batch and the dataset only",
          "[train]") {
  CHECK(PositionAfterStep(0, 6, 10) == SamplerState{.epoch = 0, .global_position = 0});
  CHECK(PositionAfterStep(1, 6, 10) == SamplerState{.epoch = 0, .global_position = 6});
  CHECK(PositionAfterStep(5, 6, 10) == SamplerState{.epoch = 3, .global_position = 0});
  CHECK(PositionAfterStep(7, 6, 10) == SamplerState{.epoch = 4, .global_position = 2});
  CHECK(PositionAfterStep(200, 256, 65536) == SamplerState{.epoch = 0, .global_position = 51200});
}

TEST_CASE("the split is described for rank 0's log line", "[train]") {
  CHECK(DescribeSplit(64, 4) == "16 samples per rank");
  CHECK(DescribeSplit(1, 1) == "1 sample per rank");
  CHECK(DescribeSplit(256, 3) == "86 samples on rank 0, 85 on ranks 1-2");
  CHECK(DescribeSplit(64, 6) == "11 samples on ranks 0-3, 10 on ranks 4-5");
  CHECK(DescribeSplit(2, 4) == "1 sample on ranks 0-1, 0 on ranks 2-3");
}

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <vector>

#include "worker_runtime/data/distributed_sampler.h"
#include "worker_runtime/data/permutation.h"

using namespace muster;
using namespace muster::runtime;

namespace {

DistributedSampler MakeSampler(size_t dataset_size, int num_replicas, int rank, bool shuffle = true,
                               uint64_t seed = 7, bool drop_last = false) {
  Result<DistributedSampler> sampler = DistributedSampler::Create(
      SamplerOptions{dataset_size, num_replicas, rank, shuffle, seed, drop_last});
  REQUIRE(sampler.ok());
  return std::move(sampler).value();
}

// Every rank's indices for one epoch, concatenated.
std::vector<size_t> AllRanksIndices(size_t dataset_size, int num_replicas, bool drop_last,
                                    uint64_t epoch) {
  std::vector<size_t> all;
  for (int rank = 0; rank < num_replicas; ++rank) {
    DistributedSampler sampler = MakeSampler(dataset_size, num_replicas, rank, true, 7, drop_last);
    sampler.SetEpoch(epoch);
    const std::vector<size_t> mine = sampler.Indices();
    CHECK(mine.size() == sampler.num_samples());
    all.insert(all.end(), mine.begin(), mine.end());
  }
  return all;
}

std::vector<size_t> Sorted(std::vector<size_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

}  // namespace

TEST_CASE("the permutation is a fixed function of the seed on every platform", "[sampler]") {
  // Pinned values: a change here means ranks built differently would disagree.
  // Both computed by an independent reference implementation.
  CHECK(Xoshiro256(0).Next() == 0x99EC5F36CB75F2B4ULL);
  CHECK(SeededPermutation(10, 42) == std::vector<size_t>{7, 3, 8, 9, 5, 6, 4, 1, 0, 2});
  CHECK(SeededPermutation(10, 42) == SeededPermutation(10, 42));
  CHECK(SeededPermutation(10, 42) != SeededPermutation(10, 43));
  const std::vector<size_t> permutation = SeededPermutation(1000, 3);
  std::vector<size_t> identity(1000);
  for (size_t i = 0; i < identity.size(); ++i) identity[i] = i;
  CHECK(Sorted(permutation) == identity);
  CHECK(permutation != identity);
}

TEST_CASE("bounded draws stay in range and reach every value", "[sampler]") {
  Xoshiro256 rng(11);
  std::map<uint64_t, int> counts;
  for (int i = 0; i < 6000; ++i) ++counts[rng.Below(6)];
  REQUIRE(counts.size() == 6);
  for (const auto& [value, count] : counts) {
    CHECK(value < 6);
    CHECK(count > 800);  // expected 1000 each
  }
}

TEST_CASE("all ranks together read the global order, padding included", "[sampler]") {
  for (size_t n : {1u, 5u, 10u, 11u, 12u, 13u, 100u}) {
    for (int world : {1, 2, 3, 4, 7}) {
      INFO("N=" << n << " W=" << world);
      const DistributedSampler rank0 = MakeSampler(n, world, 0);
      const std::vector<size_t> global = rank0.GlobalOrder();
      const size_t expected_total = (n + world - 1) / world * world;
      REQUIRE(rank0.total_size() == expected_total);
      REQUIRE(rank0.num_samples() == expected_total / world);
      REQUIRE(global.size() == expected_total);
      CHECK(Sorted(AllRanksIndices(n, world, false, 0)) == Sorted(global));

      // Every index appears, and exactly total_size - N entries are repeats.
      const std::set<size_t> distinct(global.begin(), global.end());
      CHECK(distinct.size() == n);
      CHECK(*distinct.rbegin() == n - 1);
      CHECK(global.size() - distinct.size() == expected_total - n);
    }
  }
}

TEST_CASE("rank r reads positions r, r+W, r+2W of the global order", "[sampler]") {
  const DistributedSampler rank2 = MakeSampler(10, 4, 2);
  const std::vector<size_t> global = rank2.GlobalOrder();
  CHECK(rank2.Indices() == std::vector<size_t>{global[2], global[6], global[10]});
}

TEST_CASE("padding repeats the order from its start, cyclically when N < padding", "[sampler]") {
  // N=3, W=8: total 8, padding 5 > N, as torch: [0,1,2,0,1,2,0,1].
  const DistributedSampler unshuffled = MakeSampler(3, 8, 0, /*shuffle=*/false);
  CHECK(unshuffled.GlobalOrder() == std::vector<size_t>{0, 1, 2, 0, 1, 2, 0, 1});

  const DistributedSampler shuffled = MakeSampler(10, 4, 0);
  const std::vector<size_t> global = shuffled.GlobalOrder();
  REQUIRE(global.size() == 12);
  CHECK(global[10] == global[0]);
  CHECK(global[11] == global[1]);
}

TEST_CASE("without shuffle the order is the identity", "[sampler]") {
  DistributedSampler sampler = MakeSampler(6, 2, 1, /*shuffle=*/false);
  sampler.SetEpoch(5);
  CHECK(sampler.GlobalOrder() == std::vector<size_t>{0, 1, 2, 3, 4, 5});
  CHECK(sampler.Indices() == std::vector<size_t>{1, 3, 5});
}

TEST_CASE("drop_last trims the tail so every rank reads distinct indices", "[sampler]") {
  const size_t n = 11;
  const int world = 4;
  const DistributedSampler rank0 = MakeSampler(n, world, 0, true, 7, /*drop_last=*/true);
  CHECK(rank0.num_samples() == 2);
  CHECK(rank0.total_size() == 8);
  const std::vector<size_t> global = rank0.GlobalOrder();
  std::vector<size_t> expected_prefix = SeededPermutation(n, 7);
  expected_prefix.resize(8);
  CHECK(global == expected_prefix);
  const std::vector<size_t> all = AllRanksIndices(n, world, true, 0);
  CHECK(Sorted(all) == Sorted(global));
  CHECK(std::set<size_t>(all.begin(), all.end()).size() == all.size());

  const DistributedSampler tiny = MakeSampler(3, 4, 3, true, 7, /*drop_last=*/true);
  CHECK(tiny.num_samples() == 0);
  CHECK(tiny.Indices().empty());
}

TEST_CASE("epochs shuffle differently, the same epoch and seed repeat exactly", "[sampler]") {
  DistributedSampler sampler = MakeSampler(100, 4, 1);
  DistributedSampler twin = MakeSampler(100, 4, 1);
  sampler.SetEpoch(3);
  twin.SetEpoch(3);
  CHECK(sampler.Indices() == twin.Indices());
  CHECK(sampler.GlobalOrder() == SeededPermutation(100, 7 + 3));

  const std::vector<size_t> epoch3 = sampler.Indices();
  sampler.SetEpoch(4);
  CHECK(sampler.Indices() != epoch3);

  DistributedSampler other_seed = MakeSampler(100, 4, 1, true, /*seed=*/8);
  other_seed.SetEpoch(3);
  CHECK(other_seed.Indices() != epoch3);
}

TEST_CASE("resuming from a mid-epoch state continues the uninterrupted sequence", "[sampler]") {
  const int world = 4;
  for (int rank = 0; rank < world; ++rank) {
    DistributedSampler before = MakeSampler(103, world, rank);
    before.SetEpoch(2);
    const std::vector<size_t> uninterrupted = before.Indices();
    const size_t consumed = 9;
    const SamplerState saved = before.StateAfter(consumed);
    CHECK(saved == SamplerState{2, 36});

    // A restarted process: fresh sampler, state read back from the fields a
    // checkpoint stores.
    const SamplerState restored{saved.epoch, saved.global_position};
    DistributedSampler after = MakeSampler(103, world, rank);
    Result<size_t> start = after.Resume(restored);
    REQUIRE(start.ok());
    CHECK(*start == consumed);
    CHECK(after.epoch() == 2);
    const std::vector<size_t> tail(uninterrupted.begin() + consumed, uninterrupted.end());
    CHECK(after.Indices(*start) == tail);
  }
}

TEST_CASE("a run resumed under another world size reads what remained of the epoch", "[sampler]") {
  const size_t n = 96;  // a multiple of both world sizes: no padded tail
  DistributedSampler four_ranks = MakeSampler(n, 4, 0);
  four_ranks.SetEpoch(3);
  const SamplerState saved = four_ranks.StateAfter(6);
  REQUIRE(saved == SamplerState{3, 24});
  const std::vector<size_t> global = four_ranks.GlobalOrder();
  const std::vector<size_t> remaining(global.begin() + 24, global.end());

  std::vector<size_t> resumed;
  for (int rank = 0; rank < 2; ++rank) {
    DistributedSampler two_ranks = MakeSampler(n, 2, rank);
    Result<size_t> start = two_ranks.Resume(saved);
    REQUIRE(start.ok());
    CHECK(*start == 12);
    CHECK(two_ranks.epoch() == 3);
    const std::vector<size_t> mine = two_ranks.Indices(*start);
    resumed.insert(resumed.end(), mine.begin(), mine.end());
  }
  CHECK(Sorted(resumed) == Sorted(remaining));
}

TEST_CASE("a global batch holds the same samples whatever the world size", "[sampler]") {
  const size_t n = 100;
  const size_t global_batch = 8;
  const std::vector<size_t> single_process = MakeSampler(n, 1, 0).GlobalOrder();
  for (int world : {1, 2, 4, 8}) {
    INFO("W=" << world);
    const size_t per_rank_batch = global_batch / world;
    std::vector<std::vector<size_t>> per_rank;
    for (int rank = 0; rank < world; ++rank)
      per_rank.push_back(MakeSampler(n, world, rank).Indices());
    const std::vector<size_t> global = MakeSampler(n, world, 0).GlobalOrder();
    const size_t batches = per_rank[0].size() / per_rank_batch;
    for (size_t k = 0; k < batches; ++k) {
      std::vector<size_t> batch;
      for (const std::vector<size_t>& mine : per_rank) {
        batch.insert(batch.end(), mine.begin() + k * per_rank_batch,
                     mine.begin() + (k + 1) * per_rank_batch);
      }
      const std::vector<size_t> expected(global.begin() + k * global_batch,
                                         global.begin() + (k + 1) * global_batch);
      CHECK(Sorted(batch) == Sorted(expected));
      if ((k + 1) * global_batch <= n) {  // before padding: identical to a single process
        const std::vector<size_t> alone(single_process.begin() + k * global_batch,
                                        single_process.begin() + (k + 1) * global_batch);
        CHECK(Sorted(batch) == Sorted(alone));
      }
    }
  }
}

TEST_CASE("invalid options are rejected with the bad value quoted", "[sampler]") {
  auto error_of = [](SamplerOptions options) {
    Result<DistributedSampler> sampler = DistributedSampler::Create(options);
    REQUIRE_FALSE(sampler.ok());
    CHECK(sampler.status().IsInvalidArgument());
    return sampler.status().message();
  };
  CHECK(error_of({10, 4, 4}) == "rank=4 is not below num_replicas=4");
  CHECK_THAT(error_of({10, 4, -1}), Catch::Contains("rank=-1"));
  CHECK_THAT(error_of({0, 4, 0}), Catch::StartsWith("dataset_size=0"));
  CHECK_THAT(error_of({10, 0, 0}), Catch::StartsWith("num_replicas=0"));
  CHECK_THAT(error_of({10, -2, 0}), Catch::StartsWith("num_replicas=-2"));
}

TEST_CASE("a resume position that ranks cannot share is refused", "[sampler]") {
  DistributedSampler sampler = MakeSampler(100, 4, 0);
  sampler.SetEpoch(1);
  Result<size_t> uneven = sampler.Resume(SamplerState{5, 10});
  REQUIRE_FALSE(uneven.ok());
  CHECK_THAT(uneven.status().message(), Catch::Contains("global_position=10"));
  CHECK_THAT(uneven.status().message(), Catch::Contains("num_replicas=4"));
  CHECK(sampler.epoch() == 1);

  Result<size_t> beyond = sampler.Resume(SamplerState{5, 104});
  REQUIRE_FALSE(beyond.ok());
  CHECK_THAT(beyond.status().message(), Catch::Contains("total_size=100"));

  Result<size_t> at_end = sampler.Resume(SamplerState{5, 100});
  REQUIRE(at_end.ok());
  CHECK(sampler.Indices(*at_end).empty());
}

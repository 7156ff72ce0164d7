#include <catch2/catch.hpp>

#include <vector>

#include "worker_runtime/comm/gloo/allreduce_algorithm.h"
#include "worker_runtime/comm/host_reduction.h"

using muster::runtime::ChooseGlooAllreduce;
using muster::runtime::CommError;
using muster::runtime::DataType;
using muster::runtime::DivideInPlace;
using muster::runtime::GlooAllreduce;
using muster::runtime::GlooAllreduceName;
using muster::runtime::ParseGlooAllreduce;

namespace {

// What the Gloo backend does for ReduceOp::kAvg: a sum across the ranks,
// then a division by the world size. The "ranks" here are plain vectors.
template <typename T>
std::vector<T> AverageAcrossRanks(const std::vector<std::vector<T>>& ranks, DataType type) {
  std::vector<T> sum(ranks[0].size(), T{0});
  for (const auto& contribution : ranks) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += contribution[i];
  }
  DivideInPlace(sum.data(), sum.size(), type, static_cast<int>(ranks.size()));
  return sum;
}

}  // namespace

TEST_CASE("average is the sum divided by the world size", "[comm]") {
  const std::vector<std::vector<float>> f32 = {{1, 2, -3}, {3, 4, 3}, {5, 9, 0}};
  CHECK(AverageAcrossRanks(f32, DataType::kFloat32) == std::vector<float>{3, 5, 0});
  const std::vector<std::vector<double>> f64 = {{1.0, 0.25}, {2.0, 0.75}};
  CHECK(AverageAcrossRanks(f64, DataType::kFloat64) == std::vector<double>{1.5, 0.5});
}

TEST_CASE("average of a world of one leaves the values unchanged", "[comm]") {
  std::vector<double> values = {0.1, -7.5, 1e300};
  const auto before = values;
  DivideInPlace(values.data(), values.size(), DataType::kFloat64, 1);
  CHECK(values == before);
}

TEST_CASE("average on host memory refuses 16-bit types", "[comm]") {
  std::vector<uint16_t> halves = {1, 2};
  CHECK_THROWS_AS(DivideInPlace(halves.data(), halves.size(), DataType::kFloat16, 2), CommError);
}

TEST_CASE("messages below 1 MB use bcube, larger ones the ring", "[comm]") {
  CHECK(ChooseGlooAllreduce(4, 2) == GlooAllreduce::kBcube);
  CHECK(ChooseGlooAllreduce(4, 4) == GlooAllreduce::kBcube);
  CHECK(ChooseGlooAllreduce((1 << 20) - 1, 8) == GlooAllreduce::kBcube);
  CHECK(ChooseGlooAllreduce(1 << 20, 2) == GlooAllreduce::kRing);
  CHECK(ChooseGlooAllreduce(256u << 20, 4) == GlooAllreduce::kRing);
}

TEST_CASE("worlds that are no power of two, or of one rank, never get bcube", "[comm]") {
  CHECK(ChooseGlooAllreduce(4, 3) == GlooAllreduce::kRing);
  CHECK(ChooseGlooAllreduce(4, 6) == GlooAllreduce::kRing);
  CHECK(ChooseGlooAllreduce(4, 1) == GlooAllreduce::kRing);
}

TEST_CASE("the allreduce override accepts each algorithm's name and auto", "[comm]") {
  for (GlooAllreduce algorithm : {GlooAllreduce::kRing, GlooAllreduce::kBcube}) {
    auto parsed = ParseGlooAllreduce(GlooAllreduceName(algorithm));
    REQUIRE(parsed.ok());
    CHECK(*parsed == algorithm);
  }
  CHECK_FALSE(ParseGlooAllreduce("auto")->has_value());
  CHECK_FALSE(ParseGlooAllreduce("")->has_value());
  auto bad = ParseGlooAllreduce("halving_doubling");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("'halving_doubling'") != std::string::npos);
}
